#pragma once
// The Boost.Beast and Asio headers the http module uses, and the namespace aliases it spells
// them with. Internal: nothing outside src/http includes this.

// GCC 12 with -O2 and -fsanitize=address reports -Wmaybe-uninitialized inside Beast's parser
// (boost::optional in basic_parser::content_length_unchecked) once it is inlined into our code;
// the system-header exemption does not cover inlined code, so it is silenced here, for Boost.
// Clang (the fuzz build) has no such warning and would warn about the unknown group.
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#pragma GCC diagnostic pop

namespace aios::http::detail {

namespace beast = boost::beast;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

}  // namespace aios::http::detail

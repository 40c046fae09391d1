#pragma once
// A file the build put into the library as bytes (cmake/AiosEmbed.cmake generates each
// module's embedded_files() over its files).

#include <string_view>

namespace aios {

struct EmbeddedFile {
  std::string_view name;  // the file's name as the build named it
  std::string_view content;
};

}  // namespace aios

#pragma once
// The aios-sandbox-exec program as the build embedded it (cmake/AiosEmbed.cmake generates the
// definition from the program's target): one file.

#include <span>

#include "embed/embedded_file.hpp"

namespace aios::process::sandbox_exec {

std::span<const EmbeddedFile> embedded_files();

}  // namespace aios::process::sandbox_exec

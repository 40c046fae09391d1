#pragma once
// The dashboard's files as the build embedded them (cmake/AiosEmbed.cmake generates the
// definition from src/ui/assets).

#include <span>

#include "embed/embedded_file.hpp"

namespace aios::ui {

std::span<const EmbeddedFile> embedded_files();

}  // namespace aios::ui

#pragma once
// The dashboard's files as the build embedded them (cmake/AiosEmbed.cmake generates the
// definition from src/ui/assets).

#include <span>
#include <string_view>

namespace aios::ui {

struct EmbeddedFile {
  std::string_view name;  // the file name under src/ui/assets
  std::string_view content;
};

std::span<const EmbeddedFile> embedded_files();

}  // namespace aios::ui

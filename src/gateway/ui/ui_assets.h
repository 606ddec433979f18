// The dashboard's files (src/gateway/ui/ and uPlot from npm), embedded in the
// binary at build time by cmake/embed_ui.cmake: the page needs no internet.
#pragma once

#include <string_view>

namespace switchyard::gateway {

struct UiAsset {
  std::string_view name;  // e.g. "app.js", served as /ui/app.js
  std::string_view content_type;
  std::string_view body;
};

// The asset called `name`, or null.
const UiAsset* find_ui_asset(std::string_view name);

}  // namespace switchyard::gateway

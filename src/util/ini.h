// A small INI reader for GRIST's experiments.conf: [sections], key=value, '#' or ';' comments.
#pragma once

#include <map>
#include <string>

#include "util/status.h"

namespace grist {

struct IniEntry {
  std::string value;
  int line = 0;
};
// section -> key -> entry; keys outside any section go to section "".
using IniFile = std::map<std::string, std::map<std::string, IniEntry>>;

Result<IniFile> parse_ini(const std::string& text, const std::string& source);
Result<IniFile> read_ini(const std::string& path);

}  // namespace grist

#include "util/ini.h"

#include <fstream>
#include <sstream>

#include "util/input_file.h"

namespace grist {

namespace {
std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}
}  // namespace

Result<IniFile> parse_ini(const std::string& text, const std::string& source) {
  IniFile ini;
  std::istringstream in(text);
  std::string raw, section;
  int line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    std::string line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      GRIST_CHECK(line.back() == ']', "{}:{}: a section header must end with ']'", source, line_no);
      section = trim(line.substr(1, line.size() - 2));
      continue;
    }
    auto eq = line.find('=');
    GRIST_CHECK(eq != std::string::npos, "{}:{}: expected key=value, got '{}'", source, line_no, line);
    std::string key = trim(line.substr(0, eq));
    std::string value = line.substr(eq + 1);
    // An inline comment starts at '#' (GRIST's own file writes comments on lines of their own).
    if (auto hash = value.find('#'); hash != std::string::npos) value = value.substr(0, hash);
    GRIST_CHECK(!key.empty(), "{}:{}: a key is missing before '='", source, line_no);
    ini[section][key] = IniEntry{trim(value), line_no};
  }
  return ini;
}

Result<IniFile> read_ini(const std::string& path) {
  GRIST_TRY(check_input_file(path, kMaxTextBytes, "an experiments.conf"));
  std::ifstream f(path);
  GRIST_CHECK(f.good(), "{}: cannot open file", path);
  std::stringstream buf;
  buf << f.rdbuf();
  return parse_ini(buf.str(), path);
}

}  // namespace grist

#pragma once
// An error is one line on stderr, whatever the names and paths inside it hold: a node named "a\nb" in a model,
// or a file path with a tab, must not split the message or forge a second "grist: error:" line.
#include <string>
#include <string_view>

namespace grist {

// `text` with each control character (below 0x20, and 0x7f) written as \n, \r, \t or \xHH; backslashes and
// UTF-8 (non-ASCII names are common) pass unchanged.
std::string one_line(std::string_view text);

}  // namespace grist

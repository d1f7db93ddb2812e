#include "util/one_line.h"

#include <gtest/gtest.h>

namespace grist {
namespace {

TEST(OneLine, ControlCharactersAreEscapedSoTheMessageStaysOneLine) {
  EXPECT_EQ(one_line("node 'a\nb' (Relu)"), "node 'a\\nb' (Relu)");
  EXPECT_EQ(one_line("x\r\ty"), "x\\r\\ty");
  EXPECT_EQ(one_line(std::string_view("a\0b\x1b[2Jc\x7f", 9)), "a\\x00b\\x1b[2Jc\\x7f");
}

TEST(OneLine, PrintableTextAndUtf8PassUnchanged) {
  EXPECT_EQ(one_line("conv_1/权重 \\ 'ok' é"), "conv_1/权重 \\ 'ok' é");
  EXPECT_EQ(one_line(""), "");
}

}  // namespace
}  // namespace grist

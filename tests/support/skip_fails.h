// Included before every test file (tests/CMakeLists.txt): a test that skips fails instead. CTest counts a
// skipped test as passed, and a skip for missing test data (a package CI installs) must turn CI red.
#pragma once

#include <gtest/gtest.h>

#undef GTEST_SKIP
#define GTEST_SKIP() GTEST_FAIL() << "tests never skip here (a skip would read as a pass): "

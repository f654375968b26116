#include "cli/version.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(VersionLineTest, NamesTheVersionAndTheCommit) {
  EXPECT_EQ(VersionLine("69b826a1c2d3"),
            absl::StrCat("paratune ", kVersion, " (commit 69b826a1c2d3)"));
  EXPECT_EQ(VersionLine("69b826a1c2d3-modified"),
            absl::StrCat("paratune ", kVersion, " (commit 69b826a1c2d3-modified)"));
}

TEST(VersionLineTest, SaysWhenTheCommitIsUnknown) {
  EXPECT_EQ(VersionLine(""), absl::StrCat("paratune ", kVersion, " (commit unknown)"));
  EXPECT_EQ(VersionLine("unknown"), absl::StrCat("paratune ", kVersion, " (commit unknown)"));
}

}  // namespace
}  // namespace paratune

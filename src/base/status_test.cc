#include "src/base/status.h"

#include <gtest/gtest.h>

namespace rlprof::base {
namespace {

StatusOr<int> Half(int v) {
  if (v % 2) return InvalidArgument("odd value " + std::to_string(v));
  return v / 2;
}

Status UseHalf(int v, int* out) {
  RLPROF_ASSIGN_OR_RETURN(*out, Half(v));
  return Status::Ok();
}

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "ok");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = IoError("disk full");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_EQ(s.ToString(), "i/o error: disk full");
}

TEST(StatusOrTest, HoldsValueOrError) {
  EXPECT_EQ(*Half(4), 2);
  EXPECT_FALSE(Half(3).ok());
  EXPECT_EQ(Half(3).status().message(), "odd value 3");
}

TEST(StatusOrTest, AssignOrReturnPropagatesErrors) {
  int out = -1;
  EXPECT_TRUE(UseHalf(8, &out).ok());
  EXPECT_EQ(out, 4);
  Status s = UseHalf(5, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out, 4);
}

TEST(StatusDeathTest, CheckAbortsWithMessage) {
  EXPECT_DEATH(RLPROF_CHECK_MSG(1 == 2, "boom"), "CHECK failed.*boom");
}

}  // namespace
}  // namespace rlprof::base

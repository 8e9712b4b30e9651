#include "src/analysis/model/id_map.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>
#include <vector>

namespace rlprof::analysis {
namespace {

// The same answers as a hash map with emplace (Put) or assignment (Set), dense or sparse ids,
// ids outside those given, negatives.
void CheckAgainstHashMap(const std::vector<int64_t>& given, const std::vector<int64_t>& put) {
  IdMap<int32_t> first(given), last(given);
  std::unordered_map<int64_t, int32_t> want_first, want_last;
  for (size_t i = 0; i < put.size(); ++i) {
    const int32_t v = static_cast<int32_t>(i);
    first.Put(put[i], v);
    last.Set(put[i], v);
    if (put[i] < 0) continue;
    want_first.emplace(put[i], v);
    want_last[put[i]] = v;
  }
  EXPECT_EQ(first.empty(), want_first.empty());
  for (int64_t id : put) {
    if (id < 0) {
      EXPECT_EQ(first.Find(id), nullptr);
      continue;
    }
    ASSERT_NE(first.Find(id), nullptr) << id;
    EXPECT_EQ(*first.Find(id), want_first[id]) << id;
    EXPECT_EQ(*last.Find(id), want_last[id]) << id;
  }
  for (int64_t id : {int64_t{-5}, int64_t{0}, int64_t{7}, int64_t{1} << 40, INT64_MAX})
    EXPECT_EQ(first.Contains(id), want_first.count(id) > 0) << id;
}

TEST(IdMapTest, DenseIdsAreAVectorAndAnswerLikeAHashMap) {
  std::vector<int64_t> ids;
  for (int64_t i = 1000; i < 3000; ++i) ids.push_back(i % 3 ? i : -1);
  std::vector<int64_t> put = ids;
  put.push_back(1500);  // again: first stays for Put, last for Set
  put.push_back(99999999);  // outside what was given
  put.push_back(-1);
  CheckAgainstHashMap(ids, put);
}

TEST(IdMapTest, SparseIdsAreAHashMapAndAnswerTheSame) {
  std::mt19937_64 rng(3);
  std::vector<int64_t> ids;
  for (int i = 0; i < 500; ++i) ids.push_back(static_cast<int64_t>(rng() >> 2));
  std::vector<int64_t> put = ids;
  put.push_back(ids[7]);
  put.push_back(12);
  CheckAgainstHashMap(ids, put);
}

TEST(IdMapTest, NoIdsGivenStillTakesAny) {
  CheckAgainstHashMap({}, {5, 6, 5, -2, int64_t{1} << 50});
  IdMap<int64_t> none(std::vector<int64_t>{-1, -1});
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.Find(0), nullptr);
}

}  // namespace
}  // namespace rlprof::analysis

// Data switching (GRIST.md §3 step 5): which rows of the persistent batch make way for fresh samples.
#pragma once

#include <cstdint>
#include <vector>

#include "config/config.h"

namespace grist {

// Per-row history since the row entered the batch.
class RowHistory {
 public:
  explicit RowHistory(int64_t rows = 0) { reset(rows); }
  void reset(int64_t rows);
  void add(const std::vector<double>& updated, const std::vector<double>& clipped);  // one input step
  void entered_at(int64_t row, int64_t iteration);
  // The study's intended score (U − C + 1)/(I + 1e-7); I = iterations since the row entered.
  double score(int64_t row, int64_t iteration) const;
  int64_t entered(int64_t row) const { return entered_[static_cast<size_t>(row)]; }
  int64_t rows() const { return static_cast<int64_t>(entered_.size()); }

 private:
  std::vector<double> updated_, clipped_;
  std::vector<int64_t> entered_;
};

// k = ⌊drop_rate·N⌋ (0 for N ≤ 19), as the study computed it.
int64_t rows_to_switch(double drop_rate, int64_t n);

// The k rows to replace at `iteration`: lowest scores, or the oldest (FIFO, the shipped behaviour); ties go
// to the lower row index.
std::vector<int64_t> choose_rows(const RowHistory& h, int64_t iteration, int64_t k, SwitchScore rule);

}  // namespace grist

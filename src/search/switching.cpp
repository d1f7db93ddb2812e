#include "search/switching.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace grist {

void RowHistory::reset(int64_t rows) {
  updated_.assign(static_cast<size_t>(rows), 0.0);
  clipped_.assign(static_cast<size_t>(rows), 0.0);
  entered_.assign(static_cast<size_t>(rows), 0);
}

void RowHistory::add(const std::vector<double>& updated, const std::vector<double>& clipped) {
  for (size_t r = 0; r < updated_.size() && r < updated.size(); ++r) {
    updated_[r] += updated[r];
    clipped_[r] += clipped[r];
  }
}

void RowHistory::entered_at(int64_t row, int64_t iteration) {
  auto r = static_cast<size_t>(row);
  updated_[r] = clipped_[r] = 0;
  entered_[r] = iteration;
}

double RowHistory::score(int64_t row, int64_t iteration) const {
  auto r = static_cast<size_t>(row);
  return (updated_[r] - clipped_[r] + 1.0) / (static_cast<double>(iteration - entered_[r]) + 1e-7);
}

int64_t rows_to_switch(double drop_rate, int64_t n) {
  if (n <= 19) return 0;
  return static_cast<int64_t>(std::floor(drop_rate * static_cast<double>(n)));
}

std::vector<int64_t> choose_rows(const RowHistory& h, int64_t iteration, int64_t k, SwitchScore rule) {
  std::vector<int64_t> rows(static_cast<size_t>(h.rows()));
  std::iota(rows.begin(), rows.end(), 0);
  if (rule == SwitchScore::Score) {
    std::stable_sort(rows.begin(), rows.end(),
                     [&](int64_t a, int64_t b) { return h.score(a, iteration) < h.score(b, iteration); });
  } else {
    std::stable_sort(rows.begin(), rows.end(), [&](int64_t a, int64_t b) { return h.entered(a) < h.entered(b); });
  }
  rows.resize(static_cast<size_t>(std::min<int64_t>(k, h.rows())));
  return rows;
}

}  // namespace grist

// File: glr/reference/chunk_gate.cpp
// Stage F1 (chunk-local cumsum of g) and stage B6 (its adjoint, the chunk-local reverse cumsum).
// Both run in natural log units: the kernels may store G/ln 2 and use exp2, which changes nothing
// here (gdn-spec.md §3.3: dG is w.r.t. natural-log G, no ln 2 factor).
#include "glr/reference/chunk_gate.hpp"

#include <cmath>

namespace kcv::glr::detail {

ChunkGate::ChunkGate(GateKind kind, std::int64_t rows, const Matrix& g_rows)
    : kind_(kind), rows_(rows), cum_(rows, g_rows.cols()) {
  for (std::int64_t c = 0; c < g_rows.cols(); ++c) {
    double running = 0.0;
    for (std::int64_t i = 0; i < rows; ++i) {
      running += g_rows(i, c);
      cum_(i, c) = running;
    }
  }
}

double ChunkGate::factor(double exponent) const {
  return kind_ == GateKind::kNone ? 1.0 : std::exp(exponent);
}

GateTable::GateTable(const ChunkGate& gate) {
  if (gate.kind() == GateKind::kNone || gate.table_.pairs != nullptr) return;
  const std::int64_t rows = gate.rows(), w = gate.width();
  starts_.resize(static_cast<std::size_t>(rows * w));
  pairs_.resize(static_cast<std::size_t>(rows * (rows + 1) / 2 * w));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t c = 0; c < w; ++c) {
      starts_[static_cast<std::size_t>(i * w + c)] = gate.from_start(i, c);
      for (std::int64_t j = 0; j <= i; ++j)
        pairs_[static_cast<std::size_t>((i * (i + 1) / 2 + j) * w + c)] = gate.between(i, j, c);
    }
  gate_ = &gate;
  gate.table_.starts = &starts_;
  gate.table_.pairs = &pairs_;
}

GateTable::~GateTable() {
  if (gate_ == nullptr) return;
  gate_->table_.starts = nullptr;
  gate_->table_.pairs = nullptr;
}

Matrix reverse_cumsum(const Matrix& d_cum) {
  Matrix out(d_cum.rows(), d_cum.cols());
  for (std::int64_t c = 0; c < d_cum.cols(); ++c) {
    double running = 0.0;
    for (std::int64_t i = d_cum.rows() - 1; i >= 0; --i) {
      running += d_cum(i, c);
      out(i, c) = running;
    }
  }
  return out;
}

}  // namespace kcv::glr::detail

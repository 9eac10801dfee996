// File: glr/reference/chunk_gate.hpp
// The gate of one chunk in log space (gdn-spec.md §3): stage F1's chunk-local inclusive cumsum
// G_i = Σ_{s ≤ i} g_s (restarting at every chunk, hence at every sequence start), and the decay
// factors every later stage reads, all with exponents ≤ 0 because g ≤ 0:
//   e_i = exp(G_i),  r_i = exp(G_last − G_i),  e_last = exp(G_last),  Γ_ij = exp(G_i − G_j) (i ≥ j)
// where "last" is the chunk's last valid row. The reference keeps only a chunk's valid rows, so
// there is no padded tile and no select-masking; the CUDA stages must mask padded rows with a
// select (not a multiply, §3.2). A scalar gate is stored with width 1 and read for every key
// channel; GateKind::kNone makes every factor 1. Stage B6 (reverse cumsum of dG) lives here too.
//
// A chunk's stages read each factor many times (every stage of a per-channel gate's σ backward
// reads Γ_ij,d again, and an anchored pair takes two exponentials): a GateTable computes every
// factor of one chunk once, by the same expression, and the gate reads them from it while the
// table lives. The values are the same bits with or without a table.
#pragma once

#include <cstdint>
#include <vector>

#include "glr/oracle/matrix.hpp"
#include "kcv/glr/member.hpp"

namespace kcv::glr::detail {

class GateTable;

class ChunkGate {
 public:
  ChunkGate() = default;
  /// `g_rows` holds the chunk's raw log-decays, rows × gate_width (rows × 0 for kNone).
  ChunkGate(GateKind kind, std::int64_t rows, const Matrix& g_rows);

  GateKind kind() const { return kind_; }
  std::int64_t rows() const { return rows_; }
  /// Columns of G and of the gate gradient dG: 0, 1 or K.
  std::int64_t width() const { return cum_.cols(); }
  /// Column of G that key channel d reads.
  std::int64_t col(std::int64_t d) const { return width() == 1 ? 0 : d; }

  double from_start(std::int64_t i, std::int64_t d) const {
    if (const std::vector<double>* t = table_.starts)
      return (*t)[static_cast<std::size_t>(i * width() + col(d))];
    return factor(log_cum(i, d));
  }
  double to_end(std::int64_t i, std::int64_t d) const { return between(rows_ - 1, i, d); }
  double at_end(std::int64_t d) const { return from_start(rows_ - 1, d); }
  double between(std::int64_t i, std::int64_t j, std::int64_t d) const {
    if (const std::vector<double>* t = table_.pairs; t != nullptr && j <= i)
      return (*t)[static_cast<std::size_t>((i * (i + 1) / 2 + j) * width() + col(d))];
    return factor(log_cum(i, d) - log_cum(j, d));
  }
  /// Whether a GateTable serves this gate's factors now.
  bool tabulated() const { return table_.pairs != nullptr; }
  double log_cum(std::int64_t i, std::int64_t d) const {
    return kind_ == GateKind::kNone ? 0.0 : cum_(i, col(d));
  }

 private:
  friend class GateTable;
  // The attached table's arrays. A copy of the gate starts without them, and a gate assigned to
  // drops them (the table belongs to the gate it was made from, as that gate was then).
  struct TableRef {
    const std::vector<double>* starts = nullptr;  ///< e_i: rows × width
    const std::vector<double>* pairs = nullptr;   ///< Γ_ij (j ≤ i): packed rows × width
    TableRef() = default;
    TableRef(const TableRef&) {}
    TableRef& operator=(const TableRef&) {
      starts = pairs = nullptr;
      return *this;
    }
  };

  double factor(double exponent) const;

  GateKind kind_ = GateKind::kNone;
  std::int64_t rows_ = 0;
  Matrix cum_;  ///< G, rows × width
  mutable TableRef table_;
};

/// While alive, `gate` reads e_i, r_i, e_last and Γ_ij (j ≤ i) from arrays computed here once,
/// by the expressions ChunkGate uses without them, so every value is the same bits. A gate that
/// already has a table keeps it (the outer table serves). rows·(rows + 1)/2 + rows exponentials
/// per gate column; nothing for GateKind::kNone. Not thread-safe: one thread uses the gate while
/// the table is attached.
class GateTable {
 public:
  explicit GateTable(const ChunkGate& gate);
  ~GateTable();
  GateTable(const GateTable&) = delete;
  GateTable& operator=(const GateTable&) = delete;

 private:
  const ChunkGate* gate_ = nullptr;  ///< the gate this table is attached to; null if none
  std::vector<double> starts_, pairs_;
};

/// Stage B6: dg_t = Σ_{s ≥ t, same chunk} dG_s, column by column.
Matrix reverse_cumsum(const Matrix& d_cum);

/// dG(i, col(d)) += value; a no-op without a gate. Scalar gates sum over the key channels.
inline void add_gate_grad(Matrix& d_cum, const ChunkGate& gate, std::int64_t i, std::int64_t d,
                          double value) {
  if (gate.width() > 0) d_cum(i, gate.col(d)) += value;
}

}  // namespace kcv::glr::detail

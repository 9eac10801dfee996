// File: src/oracle/dot_product.hpp
// One output element of a dot-product op (matmul, bmm, conv): the Dot2 value, the declared-type
// sequential result, and the bound
//   tau = rounding_bound(y, 0) + accumulation_bound(n, ||p||_2 + |sum p|)       (§6.3, §6.7)
//       + u_p * sum|p| (strict) or c*u_p*||p||_2   when products are rounded in the product type
//       + c*u_tf32*(||p||_2 + |sum p|)             when the profile lets fp32 dots use TF32
//       + n*min_subnormal/2 (rounded products)  and  n*min_normal (FTZ flushes products)
// Products of 16-bit inputs are exact in fp32, so only the accumulation term remains for them.
#pragma once

#include <cstddef>

#include "oracle/compensated.hpp"
#include "oracle/declared.hpp"
#include "oracle/op_base.hpp"

namespace kcv::oracle {

class DotElement {
 public:
  /// `conv`: the TF32 permission comes from Profile::tf32_conv instead of tf32_dot.
  DotElement(const EvalContext& ctx, bool conv);
  void add(double a, double b);
  /// Writes value, tau, declared and n_terms of element i.
  void write(OracleOutput& out, std::size_t i) const;

 private:
  const EvalContext& ctx_;
  bool tf32_;
  CompensatedSum exact_;
  DeclaredSum declared_;
};

}  // namespace kcv::oracle

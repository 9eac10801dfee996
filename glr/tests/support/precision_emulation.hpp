// File: glr/tests/support/precision_emulation.hpp
// A CPU emulation of a GLR kernel that honours a precision contract exactly: the chunked forward
// of the reference (same stages, same operands) in fp32 arithmetic with fp32 accumulation, where
// every operand the contract declares is rounded (RN-even) to bf16 or TF32 right before its
// product, U is rounded as Δ's addend when declared, and the state carried between chunks is
// rounded when the contract's state_carry says so. Nothing else is rounded; o is returned rounded
// to bf16 (the kernels' output dtype), the final state in fp32. The triangular inverse is the
// row-wise forward substitution T_ij = −Σ_p L_ip T_pj, each product with its operands rounded as
// kSolve declares. Feeding it a contract other than the bound's is how the tests make a kernel
// that rounds more than it declares.
#pragma once

#include "kcv/glr/chunked.hpp"
#include "kcv/glr/precision.hpp"
#include "kcv/glr/problem.hpp"

namespace kcv::glr::testing {

/// The forward of `member` under `contract`, in fp32. @pre validate(member, p).ok()
Outputs emulate_forward(Member member, const Problem& p, const PrecisionContract& contract,
                        ChunkOptions options = {});

/// A rounding the backward emulation makes beyond its contract (what a kernel that rounds more
/// than it declares does): the state gradient dS stored in bf16 from one chunk to the next.
struct BackwardExtra {
  bool ds_carry_bf16 = false;
};

/// The backward of `member` under `contract`, in fp32: the forward
/// states recomputed under the contract's forward roundings, then the chunked backward with every
/// backward product's operands rounded as the contract declares (precision_emulation_backward.cpp
/// gives the stages). dq, dk, dv and dβ are returned rounded to bf16, dg and dh0 in fp32.
/// @pre validate(member, p).ok()
Gradients emulate_backward(Member member, const Problem& p, const Cotangents& cot,
                           const PrecisionContract& contract, BackwardExtra extra = {},
                           ChunkOptions options = {});

/// p with q, k, v, β rounded to bf16 and g, h0 to fp32: the inputs a bf16 kernel receives, so
/// that the reference and the emulation see the same numbers.
Problem kernel_inputs(Problem p);

}  // namespace kcv::glr::testing

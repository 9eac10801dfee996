// File: glr/check/nan_check.hpp
// NaN propagation: one token's v row (sequence 1, value head 1, token 70 of that sequence) is set
// to NaN in a varlen GVA problem (3 sequences, H = 2, HV = 4), and the outputs must be poisoned
// exactly where the recurrence reaches:
//   o      NaN exactly at tokens ≥ t* of that sequence and value head, in every column;
//   ht     NaN exactly in that (sequence, value head) state;
//   dv, dh0  finite everywhere (the loss is linear in v: its gradient cannot depend on v);
//   dq     NaN exactly at tokens ≥ t* of that sequence for the q/k head of that value head;
//   dk     without the delta rule NaN exactly at t* (dk_t depends on v_t alone);
//   dk, dg, dβ (with the delta rule for dk) finite in every other sequence and head and in chunks
//          before t*'s chunk, NaN at t ≥ t* — inside t*'s chunk the chunk form itself spreads a
//          NaN to earlier rows (through T, and the within-chunk reverse cumsum of dg), so those
//          rows are not asserted.
#pragma once

#include "check/check_result.hpp"
#include "check/device_results.hpp"
#include "kcv/glr/member.hpp"

namespace kcv::glr::check {

CheckResult nan_propagation(Member member, const Runner& run);

}  // namespace kcv::glr::check

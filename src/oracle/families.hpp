// File: src/oracle/families.hpp
// One registration function per op family file; the registry calls them in op-table order.
#pragma once

#include "oracle/op_base.hpp"

namespace kcv::oracle {

void add_elementwise_ops(OpList& ops);
void add_reduction_ops(OpList& ops);
void add_normalization_ops(OpList& ops);
void add_matmul_ops(OpList& ops);
void add_scan_ops(OpList& ops);
void add_conv_ops(OpList& ops);

}  // namespace kcv::oracle

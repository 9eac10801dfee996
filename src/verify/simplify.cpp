// File: src/verify/simplify.cpp
// The shrink passes every probe source shares (pipeline.hpp): what makes a probe simpler without
// changing its shape. Order matters: shrinking keeps the first variant that still fails.
#include "kcv/pipeline.hpp"

namespace kcv {

std::vector<Probe> same_shape_simplifications(const Probe& best, Distribution plain,
                                              Distribution keep) {
  std::vector<Probe> out;
  const auto with = [&](auto change) {
    Probe p = best;
    change(p);
    out.push_back(std::move(p));
  };
  for (std::size_t i = 0; i < best.injections.size(); ++i) {
    with([&](Probe& p) {
      p.injections.erase(p.injections.begin() + static_cast<std::ptrdiff_t>(i));
    });
  }
  for (std::size_t i = 0; i < best.inputs.size(); ++i) {
    if (best.inputs[i].layout.kind != LayoutKind::kContiguous)
      with([&](Probe& p) { p.inputs[i].layout = Layout{}; });
    if (best.inputs[i].dist != plain && best.inputs[i].dist != keep)
      with([&](Probe& p) { p.inputs[i].dist = plain; });
  }
  for (std::size_t i = 0; best.launch_configs.size() > 1 && i < best.launch_configs.size(); ++i) {
    with([&](Probe& p) {
      p.launch_configs.erase(p.launch_configs.begin() + static_cast<std::ptrdiff_t>(i));
    });
  }
  for (std::size_t i = 0; best.autotune_configs.size() > 1 && i < best.autotune_configs.size();
       ++i) {
    with([&](Probe& p) { p.autotune_configs = {best.autotune_configs[i]}; });
  }
  if (best.repetitions > 2) with([](Probe& p) { p.repetitions = 2; });
  if (best.concurrency > 2) with([](Probe& p) { p.concurrency = 2; });
  return out;
}

}  // namespace kcv

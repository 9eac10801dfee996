// File: include/kcv/shared_doubles.hpp
// SharedDoubles: an array of doubles that several oracle results hold without a copy. A probe's
// fp64 value and its declared simulation are the same under every profile whose bound differs
// only in tau; on outputs of hundreds of millions of elements a copy per profile costs gigabytes
// of writes and page faults per probe. Copies share the array; it reads like a std::vector<double>
// (and converts to a const one), and a write through a non-const member copies it first when
// another holder shares it (copy on write), so no holder ever sees another's change.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace kcv {

class SharedDoubles {
 public:
  SharedDoubles() = default;
  SharedDoubles(std::vector<double>&& v)  // NOLINT(google-explicit-constructor): a value type
      : p_(std::make_shared<std::vector<double>>(std::move(v))) {}
  SharedDoubles(const std::vector<double>& v)  // NOLINT(google-explicit-constructor)
      : p_(std::make_shared<std::vector<double>>(v)) {}
  SharedDoubles(std::initializer_list<double> v) : p_(std::make_shared<std::vector<double>>(v)) {}

  /// The whole array as a vector (an empty one when there is none).
  const std::vector<double>& vector() const { return p_ != nullptr ? *p_ : none(); }
  operator const std::vector<double>&() const { return vector(); }  // NOLINT: reads as a vector

  std::size_t size() const { return vector().size(); }
  bool empty() const { return vector().empty(); }
  const double* data() const { return vector().data(); }
  const double& operator[](std::size_t i) const { return (*p_)[i]; }
  std::vector<double>::const_iterator begin() const { return vector().begin(); }
  std::vector<double>::const_iterator end() const { return vector().end(); }

  /// The array to write: this holder's own, copied first when another holder shares it. Take it
  /// once before a loop of writes (each call checks the sharing).
  std::vector<double>& mut() {
    if (p_ == nullptr) {
      p_ = std::make_shared<std::vector<double>>();
    } else if (p_.use_count() > 1) {
      p_ = std::make_shared<std::vector<double>>(*p_);
    }
    return *p_;
  }
  double& operator[](std::size_t i) { return mut()[i]; }
  void resize(std::size_t n, double v = 0.0) { mut().resize(n, v); }
  void assign(std::size_t n, double v) { mut().assign(n, v); }
  void clear() { mut().clear(); }
  void push_back(double v) { mut().push_back(v); }

  /// How many holders share this array (0: none).
  long holders() const { return p_.use_count(); }
  /// The array, moved out when this is its only holder (for reuse as scratch), else empty; this
  /// holds none afterwards either way.
  std::vector<double> release();

  friend bool operator==(const SharedDoubles& a, const SharedDoubles& b) {
    return a.vector() == b.vector();
  }
  friend bool operator==(const SharedDoubles& a, const std::vector<double>& b) {
    return a.vector() == b;
  }

 private:
  static const std::vector<double>& none();
  std::shared_ptr<std::vector<double>> p_;  // written only through mut(), so never while shared
};

}  // namespace kcv

// ParamPath: the dotted path of a parameter inside a module tree, built while
// walking it: "encoder.layers.3.fc1.weight", the keys PyTorch's state_dict
// uses.
//
// Push() and Pop() reuse one string buffer, so a walk over a 100-layer model
// does not allocate per step.
#ifndef KINDLING_MODULE_PARAM_PATH_H_
#define KINDLING_MODULE_PARAM_PATH_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kindling {

class ParamPath {
 public:
  ParamPath() = default;

  // Push() appends ".name" (or "name" at the root).
  void Push(std::string_view name) {
    marks_.push_back(text_.size());
    if (!text_.empty()) text_.push_back('.');
    text_.append(name);
  }
  // Push() appends a container index, ".3".
  void Push(size_t index) { Push(std::string_view(std::to_string(index))); }

  // Pop() removes the last pushed component.
  void Pop() {
    text_.resize(marks_.back());
    marks_.pop_back();
  }

  // view() is the current path; valid until the next Push() or Pop().
  std::string_view view() const { return text_; }
  std::string str() const { return text_; }

 private:
  std::string text_;
  std::vector<size_t> marks_;
};

// ScopedPathComponent pushes a component for the lifetime of a scope.
class ScopedPathComponent {
 public:
  template <class Component>
  ScopedPathComponent(ParamPath& path, const Component& component)
      : path_(path) {
    path_.Push(component);
  }
  ~ScopedPathComponent() { path_.Pop(); }
  ScopedPathComponent(const ScopedPathComponent&) = delete;
  ScopedPathComponent& operator=(const ScopedPathComponent&) = delete;

 private:
  ParamPath& path_;
};

}  // namespace kindling

#endif  // KINDLING_MODULE_PARAM_PATH_H_

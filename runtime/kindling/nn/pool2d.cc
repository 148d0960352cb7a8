#include "kindling/nn/pool2d.h"

#include <ostream>

namespace kindling::nn {

std::ostream& operator<<(std::ostream& os, const Window2d& window) {
  return os << "kernel=[" << window.kernel[0] << ", " << window.kernel[1]
            << "] stride=[" << window.stride[0] << ", " << window.stride[1]
            << "] padding=[" << window.padding[0] << ", " << window.padding[1]
            << "] dilation=[" << window.dilation[0] << ", "
            << window.dilation[1] << "]";
}

std::ostream& operator<<(std::ostream& os, const MaxPool2d& pool) {
  return os << "MaxPool2d(" << pool.window << ")";
}

std::ostream& operator<<(std::ostream& os, const AvgPool2d& pool) {
  return os << "AvgPool2d(" << pool.window << ")";
}

}  // namespace kindling::nn

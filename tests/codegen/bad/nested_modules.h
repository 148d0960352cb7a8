// Nested modules that generated code cannot name from outside their class:
// private or protected ones, ones inside a class template or an unnamed
// struct, and local classes. A public nested module is fine (see
// testdata/nested.h).
#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace demo {

class Encoder {
  struct KINDLING_MODULE Block {
    kindling::Param<kindling::Tensor<1>> weight;
  };

 protected:
  struct KINDLING_MODULE Shared {
    kindling::Param<kindling::Tensor<1>> weight;
  };

  // Public, but inside a private class: still unreachable.
 private:
  class Secret {
   public:
    struct KINDLING_MODULE Deep {
      kindling::Param<kindling::Tensor<1>> weight;
    };
  };
};

template <class T>
struct Stack {
  struct KINDLING_MODULE Layer {
    kindling::Param<T> weight;
  };
};

struct Holder {
  struct {
    struct KINDLING_MODULE Anonymous {
      kindling::Param<kindling::Tensor<1>> weight;
    };
  } unnamed;
};

inline void Build() {
  struct KINDLING_MODULE Local {
    kindling::Param<kindling::Tensor<1>> weight;
  };
}

// The record of demo::Taken::Inner would be demo::Taken_InnerRecord.
struct Taken_InnerRecord {};
struct Taken {
  struct KINDLING_MODULE Inner {
    kindling::Param<kindling::Tensor<1>> weight;
  };
};

}  // namespace demo

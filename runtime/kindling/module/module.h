// kindling/module/module.h: everything a program needs to use a module the
// generator has processed. Generated `<header>.kindling.h` files include it.
#ifndef KINDLING_MODULE_MODULE_H_
#define KINDLING_MODULE_MODULE_H_

#include "kindling/core/param.h"            // IWYU pragma: export
#include "kindling/module/annotations.h"    // IWYU pragma: export
#include "kindling/module/buffer.h"         // IWYU pragma: export
#include "kindling/module/display.h"        // IWYU pragma: export
#include "kindling/module/map.h"            // IWYU pragma: export
#include "kindling/module/module_traits.h"  // IWYU pragma: export
#include "kindling/module/record.h"         // IWYU pragma: export
#include "kindling/module/visit.h"          // IWYU pragma: export

#endif  // KINDLING_MODULE_MODULE_H_

// The scalar type of every tensor.
//
// The library is float32. Built with -DATTN_DOUBLE it is float64 instead: that
// build exists for the finite-difference gradient checks (tests/grad/), where
// float's 7 digits would make central differences too noisy to trust.
#pragma once

namespace attn {

#ifdef ATTN_DOUBLE
using real = double;
#else
using real = float;
#endif

}  // namespace attn

// FunctionRef<R(Args...)>: a callable passed to a function that calls it
// before it returns and never keeps it (gradcheck's f). C++26 has it as
// std::function_ref; this is the whole of what the library needs of it.
//
// It holds two pointers: one to the caller's callable, and one to a small
// function that knows the callable's type and calls it. Nothing is copied or
// allocated, and each lambda passed costs the compiler one such function.
// std::function would own a copy of the lambda and, with libc++, instantiate
// a dozen templates for each one: the gradient tests pass hundreds of
// lambdas, and with libc++ they compiled 3–4 times slower
// (docs/performance.md, "Session 43").
//
// Because it only points at the callable, a FunctionRef must not outlive it:
// take one as a parameter, never keep one in a variable or a member.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace attn {

template <class Signature>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
public:
    template <class F>
        requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> && std::is_invocable_r_v<R, F&, Args...>)
    FunctionRef(F&& f) noexcept  // NOLINT: converts, as std::function does
        : callable_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
          call_([](void* callable, Args... args) -> R {
              return (*static_cast<std::remove_reference_t<F>*>(callable))(std::forward<Args>(args)...);
          }) {}

    R operator()(Args... args) const { return call_(callable_, std::forward<Args>(args)...); }

private:
    void* callable_;
    R (*call_)(void*, Args...);
};

}  // namespace attn

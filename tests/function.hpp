// Function<R(Args...)>: what std::function does for the test catalogs (a
// lambda kept in a table, called later), in fewer templates.
//
// The catalogs and the op registry hold hundreds of lambdas. With libc++,
// each lambda made into a std::function instantiates about a dozen templates
// (its small-buffer storage, an allocator, tuples to construct it in place),
// and at -O0 that was most of a test file's compile time:
// tests/grad/registry.cpp took 15 s with libc++ against 4.5 s with libstdc++
// (docs/performance.md, "Session 43"). Here each lambda is one small class
// with one virtual function.
//
// A copy shares the lambda (it is only ever called, never changed), so a
// catalog entry copies as cheaply as a pointer. Calling an empty Function
// throws std::bad_function_call, as std::function does.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

namespace attn::testing {

template <class Signature>
class Function;

template <class R, class... Args>
class Function<R(Args...)> {
public:
    Function() = default;
    Function(std::nullptr_t) {}  // NOLINT: `make = nullptr`, as with std::function
    template <class F>
        requires(!std::is_same_v<std::remove_cvref_t<F>, Function> && !std::is_same_v<std::remove_cvref_t<F>, std::nullptr_t>)
    Function(F&& f)  // NOLINT: converts, as std::function does
        : callable_(std::unique_ptr<const Callable>(new Holder<std::decay_t<F>>(std::forward<F>(f)))) {}

    R operator()(Args... args) const {
        if (!callable_) throw std::bad_function_call();
        return callable_->call(std::forward<Args>(args)...);
    }
    explicit operator bool() const { return callable_ != nullptr; }
    friend bool operator==(const Function& f, std::nullptr_t) { return !f; }

private:
    struct Callable {
        virtual ~Callable() = default;
        virtual R call(Args... args) const = 0;
    };
    template <class F>
    struct Holder final : Callable {
        template <class G>
        explicit Holder(G&& g) : f(std::forward<G>(g)) {}
        R call(Args... args) const override { return f(std::forward<Args>(args)...); }
        F f;
    };
    // Made from a unique_ptr to the base class, so that shared_ptr's own
    // templates are instantiated once, not once per lambda.
    std::shared_ptr<const Callable> callable_;
};

}  // namespace attn::testing

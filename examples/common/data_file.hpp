// Reading a data file a user named (--data): the whole file, as bytes.
#pragma once

#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>

namespace attn {

// Runs make(), which builds a model of the sizes that the file at `path`
// gave in its metadata `keys` ("\"caption.config\""). A model larger than
// this machine's memory (a corrupt or hand-edited file: the sizes are whole
// numbers within bounds, but not their products) is refused naming the file
// and the keys, where it once ended in a bare std::bad_alloc. The allocator
// refuses the first tensor that would pass the machine's memory, counting
// those already made, before its memory is taken.
template <class Make>
auto model_of_file(const std::string& path, const std::string& keys, Make make) -> decltype(make()) {
    const std::string refused = path + ": the model that its metadata " + keys +
                                " describes does not fit in this machine's memory";
    try {
        return make();
    } catch (const std::length_error& e) {  // storage past the machine's memory, or a shape past int64_t
        throw std::runtime_error(refused + " (" + e.what() + ")");
    } catch (const std::bad_alloc&) {
        throw std::runtime_error(refused);
    }
}

// The bytes of the file at `path`, which must be a regular file of at most
// `max_bytes` (a GiB by default); else std::runtime_error naming the path and
// `what` it should have been ("a lexicon file"). A FIFO once made the trainer
// wait forever, and --data /dev/zero grew in memory without bound.
std::string read_data_file(const std::string& path, const std::string& what,
                           int64_t max_bytes = int64_t{1} << 30);

}  // namespace attn

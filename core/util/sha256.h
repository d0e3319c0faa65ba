// SHA-256 (FIPS 180-4) of bytes and of files, lowercase hex: checkpoint manifests, run.json's model
// and dataset hashes, snapshot contents and source files of the dataset store.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tb {

// Incremental SHA-256 for bytes that arrive in pieces (a snapshot hashed as it is written). Where
// the processor has the SHA extensions (x86 SHA-NI) blocks are compressed with them, several times
// faster than the portable rounds; `Sha256(false)` keeps to the portable rounds (tests compare the
// two).
class Sha256 {
public:
    explicit Sha256(bool useHardware = true);
    static bool hardwareAvailable();  // this processor has SHA-NI (and SSE4.1) and it was built in

    void update(const void* data, size_t size);
    void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
    std::string hex();  // pads and finishes: call once

private:
    void compress(const uint8_t* blocks, size_t count);

    bool m_hardware = false;

    std::array<uint32_t, 8> m_state{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    std::array<uint8_t, 64> m_block{};
    size_t m_used = 0;
    uint64_t m_length = 0;  // bytes
};

std::string sha256Hex(const std::string& bytes);
// Throws tb::Error naming the file when unreadable. With `stop`, gives up (returns "") once it is
// set: a reader that no longer wants the hash need not wait for a whole multi-GB file.
std::string sha256File(const std::string& path, const std::atomic<bool>* stop = nullptr);

}  // namespace tb

#pragma once

// Little-endian byte writer and bounds-checked reader for the project's binary blobs (the
// prediction cache "MXPC", the search result cache "MXSR"). Integers are written byte by byte in
// little-endian order; `pod` arrays and `raw` blocks are copied as they are in memory (every
// supported target is little-endian IEEE-754).

#include <bit>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace memx {

class ByteWriter {
public:
    explicit ByteWriter(std::vector<std::uint8_t> header = {})
        : mOut(std::move(header))
    {
    }

    void u32(std::uint32_t v) { little(v); }
    void u64(std::uint64_t v) { little(v); }
    /// Little-endian u32 words, no length (what u32 writes for each, in one copy).
    void u32s(const std::uint32_t *words, std::size_t n)
    {
        if constexpr (std::endian::native == std::endian::little)
            raw(words, n * sizeof(std::uint32_t));
        else
            for (std::size_t i = 0; i < n; ++i)
                u32(words[i]);
    }
    /// Room for `bytes` more bytes.
    void reserve(std::size_t bytes) { mOut.reserve(mOut.size() + bytes); }
    /// Length (u64) + bytes.
    void str(const std::string &s)
    {
        u64(s.size());
        mOut.insert(mOut.end(), s.begin(), s.end());
    }
    /// `size` bytes as they are in memory, no length.
    void raw(const void *data, std::size_t size)
    {
        const auto *p = static_cast<const std::uint8_t *>(data);
        mOut.insert(mOut.end(), p, p + size);
    }
    /// Length (u64) + the elements as they are in memory.
    template<typename T> void pod(const std::vector<T> &v)
    {
        static_assert(std::is_trivially_copyable_v<T>);
        u64(v.size());
        if (!v.empty())
            raw(v.data(), v.size() * sizeof(T));
    }

    std::vector<std::uint8_t> take() { return std::move(mOut); }

private:
    template<typename T> void little(T v)
    {
        if constexpr (std::endian::native == std::endian::little) {
            raw(&v, sizeof v);
        } else {
            for (std::size_t i = 0; i < sizeof v; ++i)
                mOut.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
        }
    }

    std::vector<std::uint8_t> mOut;
};

/// Reads what ByteWriter wrote. Every read checks the remaining size first and throws
/// std::runtime_error("<what>: truncated at byte N") instead of reading past the end.
class ByteReader {
public:
    ByteReader(const std::vector<std::uint8_t> &bytes, std::string what, std::size_t pos = 0)
        : mBytes(bytes)
        , mWhat(std::move(what))
        , mPos(pos)
    {
    }

    std::size_t pos() const { return mPos; }
    std::size_t remaining() const { return mBytes.size() - mPos; }
    bool atEnd() const { return mPos == mBytes.size(); }

    /// Throws unless `n` more bytes are available.
    void need(std::uint64_t n) const
    {
        if (n > remaining())
            throw std::runtime_error(mWhat + ": truncated at byte " + std::to_string(mPos));
    }
    /// Throws unless `n` items of `itemSize` bytes are available (without overflow: check a
    /// count read from the input before allocating for it).
    void needItems(std::uint64_t n, std::size_t itemSize) const
    {
        if (n > remaining() / itemSize)
            throw std::runtime_error(mWhat + ": truncated at byte " + std::to_string(mPos));
    }
    std::uint32_t u32()
    {
        need(4);
        std::uint32_t v = 0;
        for (int i = 0; i < 4; ++i)
            v |= static_cast<std::uint32_t>(mBytes[mPos + i]) << (8 * i);
        mPos += 4;
        return v;
    }
    std::uint64_t u64()
    {
        need(8);
        std::uint64_t v = 0;
        for (int i = 0; i < 8; ++i)
            v |= static_cast<std::uint64_t>(mBytes[mPos + i]) << (8 * i);
        mPos += 8;
        return v;
    }
    std::string str()
    {
        const std::uint64_t n = u64();
        need(n);
        std::string s(reinterpret_cast<const char *>(mBytes.data() + mPos), n);
        mPos += n;
        return s;
    }
    void raw(void *out, std::size_t size)
    {
        need(size);
        if (size > 0) // an empty vector's data() may be null: memcpy must not see it (UBSan)
            std::memcpy(out, mBytes.data() + mPos, size);
        mPos += size;
    }
    template<typename T> std::vector<T> pod()
    {
        static_assert(std::is_trivially_copyable_v<T>);
        const std::uint64_t n = u64();
        needItems(n, sizeof(T));
        std::vector<T> v(n);
        raw(v.data(), n * sizeof(T));
        return v;
    }

private:
    const std::vector<std::uint8_t> &mBytes;
    std::string mWhat;
    std::size_t mPos;
};

} // namespace memx

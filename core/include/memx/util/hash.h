#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace memx {

/// 64-bit FNV-1a of `bytes` (offset basis 14695981039346656037, prime 1099511628211).
std::uint64_t fnv1a64(const std::string &bytes);

/// A 64-bit value as 16 lowercase hex digits (blob names, digests in canonical keys).
std::string hex16(std::uint64_t value);

/// fnv1a64 as 16 lowercase hex digits.
std::string fnv1a64Hex(const std::string &bytes);

/// A double as text that reads back to the same value ("%.17g"), for canonical keys.
std::string exactNumber(double value);

/// Stable content hash of a JSON value: fnv1a64Hex of its compact dump. nlohmann::json keeps object
/// keys sorted, so equal values give equal hashes whatever order their keys were written in.
std::string jsonHash(const nlohmann::json &value);

} // namespace memx

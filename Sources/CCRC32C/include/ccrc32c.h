#ifndef CCRC32C_H
#define CCRC32C_H
#include <stddef.h>
#include <stdint.h>

/// Extends a CRC32C (Castagnoli) value with `length` bytes.
/// `jl_crc32c_extend(jl_crc32c_extend(0, a), b) == jl_crc32c_extend(0, a || b)`.
uint32_t jl_crc32c_extend(uint32_t crc, const void *data, size_t length);

/// The portable (table-driven) implementation, exposed so tests can compare it
/// with the hardware path.
uint32_t jl_crc32c_extend_portable(uint32_t crc, const void *data, size_t length);

/// 1 when the hardware (SSE4.2 / ARMv8 CRC) path is in use.
int jl_crc32c_hardware(void);

/// Index of the first non-zero byte in `data`, or `length` when all are zero. Recovery uses it
/// to check the zero fill of pre-zeroed segments at memory speed.
size_t jl_first_nonzero(const void *data, size_t length);

#endif

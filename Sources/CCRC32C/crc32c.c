// CRC32C (Castagnoli, reflected polynomial 0x82F63B78).
// Hardware path: SSE4.2 `crc32` instruction via a target attribute, so the
// package needs no unsafeFlags. Portable path: slicing-by-8 tables.
#include "ccrc32c.h"
#include <string.h>

static uint32_t table[8][256];
static int table_ready = 0;

static void build_tables(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = table[0][n];
        for (int k = 1; k < 8; k++) {
            c = table[0][c & 0xff] ^ (c >> 8);
            table[k][n] = c;
        }
    }
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

uint32_t jl_crc32c_extend_portable(uint32_t crc, const void *data, size_t length) {
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE)) build_tables();
    const uint8_t *p = (const uint8_t *)data;
    uint32_t c = ~crc;
    while (length >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint32_t lo = (uint32_t)w ^ c;
        uint32_t hi = (uint32_t)(w >> 32);
        c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
            table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
            table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
        p += 8;
        length -= 8;
    }
    while (length--) c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <cpuid.h>

__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t crc, const void *data, size_t length) {
    const uint8_t *p = (const uint8_t *)data;
    uint64_t c = (uint32_t)~crc;
    while (length && ((uintptr_t)p & 7)) { c = _mm_crc32_u8((uint32_t)c, *p++); length--; }
    while (length >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        length -= 8;
    }
    while (length--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}

static int detect(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    return (c & bit_SSE4_2) != 0;
}
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
static uint32_t crc32c_arm(uint32_t crc, const void *data, size_t length) {
    const uint8_t *p = (const uint8_t *)data;
    uint32_t c = ~crc;
    while (length >= 8) { uint64_t w; memcpy(&w, p, 8); c = __crc32cd(c, w); p += 8; length -= 8; }
    while (length--) c = __crc32cb(c, *p++);
    return ~c;
}
static int detect(void) { return 1; }
#else
static int detect(void) { return 0; }
#endif

static int hw_state = -1;

int jl_crc32c_hardware(void) {
    int s = __atomic_load_n(&hw_state, __ATOMIC_RELAXED);
    if (s < 0) { s = detect(); __atomic_store_n(&hw_state, s, __ATOMIC_RELAXED); }
    return s;
}

uint32_t jl_crc32c_extend(uint32_t crc, const void *data, size_t length) {
#if defined(__x86_64__)
    if (jl_crc32c_hardware()) return crc32c_sse42(crc, data, length);
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
    return crc32c_arm(crc, data, length);
#endif
    return jl_crc32c_extend_portable(crc, data, length);
}

size_t jl_first_nonzero(const void *data, size_t length) {
    const uint8_t *p = (const uint8_t *)data;
    size_t i = 0;
    while (i < length && ((uintptr_t)(p + i) & 7)) { if (p[i]) return i; i++; }
    while (i + 32 <= length) {
        uint64_t a, b, c, d;
        memcpy(&a, p + i, 8); memcpy(&b, p + i + 8, 8); memcpy(&c, p + i + 16, 8); memcpy(&d, p + i + 24, 8);
        if (a | b | c | d) break;
        i += 32;
    }
    while (i < length) { if (p[i]) return i; i++; }
    return length;
}

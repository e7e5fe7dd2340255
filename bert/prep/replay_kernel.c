/* The word-by-word walks of the exact replay (see replay_kernel.py, whose Python functions of the same names,
 * ending in _python, are the readable definition): compiled on first use when a C compiler is there. */
#include <stdint.h>

/* random.shuffle(list(range(candidates))): _randbelow(n) for n = candidates .. 2, each reading the top 16 bits
 * of words from q until they fall below limits[n]; swaps as Fisher-Yates does and copies the first `keep`
 * entries to `chosen`. Returns the position after the walk, or -1 when it would read past `end`. */
static long shuffle_prefix(const uint16_t *top, long q, long end, const uint16_t *limits, const int32_t *shifts,
                    long candidates, long keep, int32_t *order, int32_t *chosen) {
    for (long i = 0; i < candidates; i++) order[i] = (int32_t)i;
    for (long n = candidates; n >= 2; n--) {
        uint16_t limit = limits[n];
        while (q < end && top[q] >= limit) q++;
        if (q >= end) return -1;
        long j = top[q++] >> shifts[n];
        int32_t held = order[n - 1];
        order[n - 1] = order[j];
        order[j] = held;
    }
    for (long i = 0; i < keep; i++) chosen[i] = order[i];
    return q;
}

static double random_at(const uint32_t *words, long q) {
    return ((words[q] >> 5) * 67108864.0 + (words[q + 1] >> 6)) * (1.0 / 9007199254740992.0);
}

/* The masking draws: per position random() < 0.8 gives [MASK], else random() < 0.5 keeps the word (KEEP),
 * else _randbelow(vocab_size) is the word written. Returns the position after them, or -1 past `end`. */
static long mask_draws(const uint32_t *words, long q, long end, long count, int32_t mask_id, int32_t keep_code,
                uint32_t vocab_size, int32_t *out) {
    int shift = 32;
    for (uint32_t v = vocab_size; v; v >>= 1) shift--;
    for (long k = 0; k < count; k++) {
        if (q + 4 >= end) return -1;
        if (random_at(words, q) < 0.8) {
            out[k] = mask_id;
            q += 2;
            continue;
        }
        if (random_at(words, q + 2) < 0.5) {
            out[k] = keep_code;
            q += 4;
            continue;
        }
        q += 4;
        while (q < end && (words[q] >> shift) >= vocab_size) q++;
        if (q >= end) return -1;
        out[k] = (int32_t)(words[q++] >> shift);
    }
    return q;
}

/* One instance's walks: the candidate shuffle, then the masking draws of its first `keep` candidates. */
long instance_draws(const uint16_t *top, const uint32_t *words, long q, long end, const uint16_t *limits,
                    const int32_t *shifts, long candidates, long keep, int32_t mask_id, int32_t keep_code,
                    uint32_t vocab_size, int32_t *order, int32_t *chosen, int32_t *shown) {
    q = shuffle_prefix(top, q, end, limits, shifts, candidates, keep, order, chosen);
    return q < 0 ? q : mask_draws(words, q, end, keep, mask_id, keep_code, vocab_size, shown);
}

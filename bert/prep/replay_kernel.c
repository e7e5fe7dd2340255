/* The exact replay of exact_instances.py in C: the same draws from the same Mersenne Twister stream, in the
 * same order, giving the same instances. exact_instances.py (_Replay, _truncate, _pass_two) and the walks in
 * replay_kernel.py are the readable definition; this file is compiled on first use when a C compiler is there,
 * and tests compare the two. The generator is CPython's: MT19937 with its 624 words of state and position (a
 * freshly seeded one, whose first draw twists), and random() and _randbelow() consuming its 32-bit outputs as
 * random.Random does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { MT_N = 624, MT_M = 397 };

typedef struct {
    uint32_t key[MT_N];
    uint32_t pos;        /* the next word is words[pos]; MT_N: twist first */
    uint32_t words[MT_N]; /* the tempered outputs of key, made a whole twist at a time */
} generator;

static uint32_t mix(uint32_t upper, uint32_t lower, uint32_t far) {
    uint32_t y = (upper & 0x80000000U) | (lower & 0x7fffffffU);
    return far ^ (y >> 1) ^ ((0U - (y & 1U)) & 0x9908b0dfU);
}

static void twist(generator *g) {
    uint32_t *mt = g->key;
    int k = 0;
    for (; k < MT_N - MT_M; k++) mt[k] = mix(mt[k], mt[k + 1], mt[k + MT_M]);
    for (; k < MT_N - 1; k++) mt[k] = mix(mt[k], mt[k + 1], mt[k + MT_M - MT_N]);
    mt[MT_N - 1] = mix(mt[MT_N - 1], mt[0], mt[MT_M - 1]);
    for (k = 0; k < MT_N; k++) {
        uint32_t y = mt[k];
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c5680U;
        y ^= (y << 15) & 0xefc60000U;
        g->words[k] = y ^ (y >> 18);
    }
    g->pos = 0;
}

static uint32_t next_word(generator *g) {
    if (g->pos >= MT_N) twist(g);
    return g->words[g->pos++];
}

/* random.random(): 53 bits from two words. */
static double random_double(generator *g) {
    uint32_t a = next_word(g) >> 5;
    uint32_t b = next_word(g) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

static int bit_length(uint64_t n) {
#if defined(__GNUC__) || defined(__clang__)
    return n ? 64 - __builtin_clzll(n) : 0;
#else
    int k = 0;
    for (; n; n >>= 1) k++;
    return k;
#endif
}

static int lowest_bit(uint64_t n) { /* n != 0 */
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(n);
#else
    int k = 0;
    for (; !(n & 1); n >>= 1) k++;
    return k;
#endif
}

/* random._randbelow(n), n >= 1: the top n.bit_length() bits of a word, drawn again while >= n. */
static uint64_t randbelow(generator *g, uint64_t n) {
    int shift = 32 - bit_length(n);
    uint64_t r = next_word(g) >> shift;
    while (r >= n) r = next_word(g) >> shift;
    return r;
}

/* The permutation random.shuffle gives list(range(n)): _randbelow(i + 1) for i = n - 1 .. 1 and a swap each,
 * taking a word per step without branching on its value (a rejected word swaps the last unsettled entry with
 * itself), as the accept-or-reject branch of _randbelow would be mispredicted on about one word in four. */
static void shuffle_range(generator *g, int64_t *order, int64_t n) {
    for (int64_t i = 0; i < n; i++) order[i] = i;
    uint64_t left = (uint64_t)n; /* order[left:] is settled */
    while (left >= 2) {
        uint64_t r = next_word(g) >> (32 - bit_length(left));
        int accept = r < left;
        uint64_t j = accept ? r : left - 1;
        int64_t held = order[left - 1];
        order[left - 1] = order[j];
        order[j] = held;
        left -= (uint64_t)accept;
    }
}

void shuffled(uint32_t *state, int64_t n, int64_t *order) {
    shuffle_range((generator *)state, order, n);
}

/* bisect.bisect_left(a, value, lo, hi) */
static int64_t bisect_left(const int64_t *a, int64_t value, int64_t lo, int64_t hi) {
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < value) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

typedef struct {
    const int64_t *sent, *docs, *order; /* sentence and document offsets; order[d]: the document at shuffled d */
    int64_t documents, max_tokens;
    double short_seq_prob;
    const int32_t *to_mask; /* to_mask[c]: positions masked in an instance of c candidates */
    int32_t mask_id, keep_code;
    uint32_t vocab_size;
    int64_t width;    /* max_predictions: the row width of positions and shown */
    int64_t *shuffle; /* scratch: the candidates' shuffle (max_tokens entries) */
    int32_t *slot;    /* scratch: per position, the masked draw there (max_tokens + 2 entries) */
    int32_t *drawn;   /* scratch: what each masked draw shows (width entries) */
    uint64_t *marked; /* scratch: a bit per position, the masked ones set ((max_tokens + 1) / 64 + 1 words, zero) */
} replay;

typedef struct {
    int64_t *spans; /* per instance: A start, A length, B start, B length, after truncation */
    int8_t *nsp;
    int32_t *counts, *positions, *shown; /* masked positions (sorted) and what each shows, rows of `width` */
} outputs;

/* B of a random next sentence: sentences of another document from a random one on, until `want` tokens. */
static void random_next(generator *g, const replay *r, int64_t d, int64_t want, int64_t *b_start, int64_t *b_end) {
    int64_t other = d;
    for (int t = 0; t < 10; t++) {
        other = (int64_t)randbelow(g, (uint64_t)r->documents);
        if (other != d) break;
    }
    int64_t first = r->docs[r->order[other]], end = r->docs[r->order[other] + 1];
    int64_t start = first + (int64_t)randbelow(g, (uint64_t)(end - first));
    int64_t stop = bisect_left(r->sent, r->sent[start] + want, start + 1, end);
    *b_start = r->sent[start];
    *b_end = r->sent[stop];
}

/* One instance: truncation coins, the candidate shuffle, the masking draws; written as row `row`. */
static void instance(generator *g, const replay *r, const outputs *out, int64_t row, int64_t a_start, int64_t a_len,
                     int64_t b_start, int64_t b_len, int8_t random_next_label) {
    while (a_len + b_len > r->max_tokens) {
        int front = random_double(g) < 0.5;
        if (a_len > b_len) {
            a_start += front;
            a_len--;
        } else {
            b_start += front;
            b_len--;
        }
    }
    int64_t candidates = a_len + b_len, keep = r->to_mask[candidates];
    int64_t *order = r->shuffle;
    shuffle_range(g, order, candidates);
    /* Candidate c is position c + 1 in A ([CLS] first), c + 2 in B; the reference sorts them by position: the
     * masked positions are marked in a bit set and read back in order. */
    int32_t *slot = r->slot, *drawn = r->drawn;
    uint64_t *marked = r->marked;
    for (int64_t k = 0; k < keep; k++) {
        if (random_double(g) < 0.8) drawn[k] = r->mask_id;
        else if (random_double(g) < 0.5) drawn[k] = r->keep_code;
        else drawn[k] = (int32_t)randbelow(g, r->vocab_size);
        int32_t position = (int32_t)(order[k] < a_len ? order[k] + 1 : order[k] + 2);
        slot[position] = (int32_t)k;
        marked[position >> 6] |= (uint64_t)1 << (position & 63);
    }
    int32_t *positions = out->positions + row * r->width, *shown = out->shown + row * r->width;
    for (int64_t word = 0, k = 0; k < keep; word++) {
        while (marked[word]) {
            int32_t position = (int32_t)(64 * word + lowest_bit(marked[word]));
            marked[word] &= marked[word] - 1;
            positions[k] = position;
            shown[k++] = drawn[slot[position]];
        }
    }
    int64_t *span = out->spans + 4 * row;
    span[0] = a_start;
    span[1] = a_len;
    span[2] = b_start;
    span[3] = b_len;
    out->nsp[row] = random_next_label;
    out->counts[row] = (int32_t)keep;
}

/* The replay's loop over passes and documents, from `loop` on, until `capacity` instances are made. */
static int64_t replay_documents(generator *g, const replay *r, const outputs *out, int64_t *loop, int64_t dupe_factor,
                                int64_t capacity) {
    const int64_t *sent = r->sent, max_tokens = r->max_tokens;
    int64_t pass = loop[0], d = loop[1], chunk = loop[2], end = loop[3], target = loop[4], made = 0;
    while (pass < dupe_factor) {
        if (chunk < 0) {
            chunk = r->docs[r->order[d]];
            end = r->docs[r->order[d] + 1];
            target = max_tokens;
            if (random_double(g) < r->short_seq_prob) target = 2 + (int64_t)randbelow(g, (uint64_t)max_tokens - 1);
        }
        while (chunk < end) {
            if (made == capacity) goto stop;
            /* The chunk grows a sentence at a time until it holds `target` tokens or the document ends. */
            int64_t last = bisect_left(sent, sent[chunk] + target, chunk + 1, end) - 1;
            int64_t count = last + 1 - chunk;
            int64_t a_end = chunk + (count >= 2 ? 1 + (int64_t)randbelow(g, (uint64_t)count - 1) : 1);
            int64_t a_start = sent[chunk], a_len = sent[a_end] - sent[chunk];
            if (count == 1 || random_double(g) < 0.5) {
                int64_t b_start, b_end;
                random_next(g, r, d, target - a_len, &b_start, &b_end);
                instance(g, r, out, made++, a_start, a_len, b_start, b_end - b_start, 1);
                chunk = a_end; /* the sentences B did not take start the next chunk */
            } else {
                instance(g, r, out, made++, a_start, a_len, sent[a_end], sent[last + 1] - sent[a_end], 0);
                chunk = last + 1;
            }
        }
        chunk = -1;
        if (++d == r->documents) {
            d = 0;
            pass++;
        }
    }
stop:
    loop[0] = pass;
    loop[1] = d;
    loop[2] = chunk;
    loop[3] = end;
    loop[4] = target;
    return made;
}

/* Goes on with the replay from `loop` (pass, shuffled document, its current chunk or -1 before its target
 * length is drawn, the document's end, the target length) and makes at most `capacity` instances; returns how
 * many, with `loop` where it stopped (pass == dupe_factor when done), or -1 when its scratch memory could not be
 * had. */
int64_t replay_block(uint32_t *state, int64_t *loop, const int64_t *sent, const int64_t *docs, const int64_t *order,
                     int64_t documents, int64_t dupe_factor, int64_t max_tokens, double short_seq_prob,
                     const int32_t *to_mask, int32_t mask_id, int32_t keep_code, uint32_t vocab_size, int64_t width,
                     int64_t capacity, int64_t *spans, int8_t *nsp, int32_t *counts, int32_t *positions,
                     int32_t *shown) {
    generator *g = (generator *)state;
    replay r = {sent, docs, order, documents, max_tokens, short_seq_prob, to_mask, mask_id, keep_code, vocab_size,
                width, malloc(sizeof(int64_t) * (size_t)max_tokens), malloc(sizeof(int32_t) * (size_t)(max_tokens + 2)),
                malloc(sizeof(int32_t) * (size_t)width), calloc((size_t)(max_tokens + 1) / 64 + 1, sizeof(uint64_t))};
    const outputs out = {spans, nsp, counts, positions, shown};
    int64_t made = r.shuffle && r.slot && r.drawn && r.marked ? replay_documents(g, &r, &out, loop, dupe_factor,
                                                                               capacity) : -1;
    free(r.shuffle);
    free(r.slot);
    free(r.drawn);
    free(r.marked);
    return made;
}

/* The samples of instances rows[0..n), in that order (see exact_instances.build_samples): [CLS] A [SEP] B [SEP]
 * at offsets[i] with segment ids 0 up to A's [SEP] and 1 after it, each masked position written over with what
 * it shows (unless keep_code), and per sample its masked positions and their original ids in rows of width. */
void build_samples(const int32_t *tokens, const int64_t *spans, const int64_t *mask_offsets,
                   const int32_t *mask_positions, const int32_t *replacements, const int64_t *rows, int64_t n,
                   int32_t cls, int32_t sep, int32_t keep_code, int64_t width, const int64_t *offsets,
                   int32_t *out_tokens, int8_t *out_segments, int32_t *out_positions, int32_t *out_labels) {
    for (int64_t i = 0; i < n; i++) {
        const int64_t *span = spans + 4 * rows[i];
        int64_t a_start = span[0], a_len = span[1], b_start = span[2], b_len = span[3];
        int32_t *row = out_tokens + offsets[i];
        int8_t *segments = out_segments + offsets[i];
        row[0] = cls;
        memcpy(row + 1, tokens + a_start, (size_t)a_len * sizeof(int32_t));
        row[a_len + 1] = sep;
        memcpy(row + a_len + 2, tokens + b_start, (size_t)b_len * sizeof(int32_t));
        row[a_len + b_len + 2] = sep;
        memset(segments, 0, (size_t)a_len + 2);
        memset(segments + a_len + 2, 1, (size_t)b_len + 1);
        int32_t *positions = out_positions + i * width, *labels = out_labels + i * width;
        for (int64_t m = mask_offsets[rows[i]], k = 0; m < mask_offsets[rows[i] + 1]; m++, k++) {
            int32_t position = mask_positions[m];
            positions[k] = position;
            labels[k] = row[position];
            if (replacements[m] != keep_code) row[position] = replacements[m];
        }
    }
}

/*
 * plan.h - the plan: the order in which the samples of a shard are used,
 * epoch by epoch, cut into mini-batches, each sample marked hit or miss.
 *
 * The plan is a pure function of (schedule, batch size, seed, epoch,
 * shuffle mode, balance, drop-last): epoch e is computed from the
 * schedule and the random stream (seed, e, 0, RFB_STAGE_PLAN) alone, so
 * the plan of epochs 5-9 is exactly the tail of the plan of 0-9.
 *
 * It travels between programs as text, one line per mini-batch
 * (refurb-plan(5)):
 *
 *   #refurb-plan 1 schedule=... index=... samples=... batch=256 ...
 *   B <epoch> <step> <global-step> <count> <id>:h <id>:m<death> ...
 *   D ...   (with drop-last: the incomplete last batch, cached, not trained)
 *   E <epoch> <batches> <samples> <misses>
 *
 * This header has the generator (rfb_plan), the text writer and a strict
 * parser, both per line and as a stream reader (rfb_plan_reader) that
 * checks the sequence: every stage that reads a plan goes through it.
 */
#ifndef REFURB_PLAN_H
#define REFURB_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "refurb/enum.h"
#include "refurb/error.h"
#include "refurb/evict.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RFB_PLAN_VERSION 2      /* the newest version written and read;
				 * plans without --even are written as 1 */
#define RFB_PLAN_MAX_BATCH 65536u
#define RFB_PLAN_MAX_ADDR 6          /* fields of a cache address */
/* Longest sample token: id:m<death>@ and six 16-digit hex fields. */
#define RFB_PLAN_MAX_TOKEN (10 + 2 + 20 + 1 + RFB_PLAN_MAX_ADDR * 17)
#define RFB_PLAN_MAX_HEADER 65536u   /* bytes of the header line */
/* Longest line a reader accepts (a full batch of the longest tokens). */
#define RFB_PLAN_MAX_LINE \
	((size_t)RFB_PLAN_MAX_BATCH * (RFB_PLAN_MAX_TOKEN + 1) + 128)

enum rfb_plan_shuffle {
	RFB_PLAN_CACHE_AWARE = 1, /* misses spread evenly over the batches */
	RFB_PLAN_RANDOM = 2,      /* one plain shuffle (the naive baseline) */
	RFB_PLAN_SEQUENTIAL = 3,  /* schedule order ("none"), for debugging */
};

enum rfb_plan_balance {
	RFB_PLAN_BALANCE_NONE = 0,
	RFB_PLAN_BALANCE_PIXELS = 1, /* even miss pixels per batch */
	RFB_PLAN_BALANCE_COST = 2,   /* even predicted miss cost per batch */
};

/* Equal steps on every shard of N (refurb-plan --even): the shards of N
 * differ by at most one sample; pad repeats one sample in every epoch of
 * the smaller shards, drop leaves one out of every epoch of the larger
 * ones, so that every shard has the same samples and batches per epoch. */
enum rfb_plan_even {
	RFB_PLAN_EVEN_NONE = 0,
	RFB_PLAN_EVEN_PAD = 1,
	RFB_PLAN_EVEN_DROP = 2,
};

/* The header line: what the plan was made from and with. */
typedef struct rfb_plan_header {
	unsigned version;
	uint64_t schedule_identity;
	uint64_t index_identity;
	uint32_t samples;       /* n: samples of the shard = per epoch */
	uint32_t total;         /* samples of the whole index */
	uint32_t reuse;         /* r */
	int policy;             /* enum rfb_evict_policy */
	uint64_t evict_seed;    /* the schedule's seed */
	uint64_t seed;          /* the plan's seed */
	uint32_t batch_size;
	uint32_t batches;       /* batch lines per epoch: ceil(m / batch),
				 * m = rfb_plan_epoch_samples() */
	uint32_t first_epoch, last_epoch; /* inclusive */
	int shuffle;            /* enum rfb_plan_shuffle */
	int balance;            /* enum rfb_plan_balance */
	int drop_last;
	uint32_t shard_index, shard_count;
	int even;               /* enum rfb_plan_even (version 2; none in 1) */
	uint32_t first_step;    /* step of the first batch of first_epoch
				 * (a resumed plan; 0: the whole epoch) */
	uint64_t cost_identity; /* balance = cost: rfb_costs_identity() of
				 * the cost file (0: not known, not written) */
} rfb_plan_header;

/* One sample of a batch line. */
typedef struct rfb_plan_sample {
	uint32_t id;
	uint8_t miss;        /* 1 miss (recompute), 0 hit (read the cache) */
	uint8_t addr_count;  /* 0: no cache address; else fields in addr */
	uint64_t death;      /* misses: epoch the new record dies in (the
			      * next miss); hits: 0 */
	uint64_t addr[RFB_PLAN_MAX_ADDR]; /* "@a.b.c" annotation, meaning
					   * defined by the cache */
} rfb_plan_sample;

typedef struct rfb_plan_batch {
	uint32_t epoch;
	uint32_t step;         /* 0 .. batches-1 within the epoch */
	uint64_t global_step;  /* epoch * batches + step */
	int dropped;           /* a D line (drop-last): cache, do not train */
	uint32_t count;
	rfb_plan_sample *samples; /* count entries; owned by whoever filled
				   * the batch, valid until its next call */
} rfb_plan_batch;

typedef struct rfb_plan_epoch_end {
	uint32_t epoch;
	uint32_t batches;
	uint32_t samples;
	uint32_t misses;
} rfb_plan_epoch_end;

/* Kinds of line (and of item returned by rfb_plan_next and the reader). */
enum rfb_plan_line_type {
	RFB_PLAN_LINE_HEADER = 1,
	RFB_PLAN_LINE_BATCH = 2,   /* B or D */
	RFB_PLAN_LINE_EPOCH = 3,   /* E */
	RFB_PLAN_LINE_COMMENT = 4, /* any other line starting with '#' */
};

typedef struct rfb_plan_item {
	int type;                  /* RFB_PLAN_LINE_BATCH or _EPOCH */
	rfb_plan_batch batch;
	rfb_plan_epoch_end epoch;
} rfb_plan_item;

/* ---- names ---- */

/* The modes' names (enum.h) and their namers and parsers: NULL for an
 * unknown value, -1 for an unknown name.  Shuffle: "cache-aware",
 * "random", "none" ("sequential" accepted for "none"); balance: "none",
 * "pixels", "cost"; even: "none", "pad", "drop". */
extern const struct rfb_enum_name rfb_plan_shuffle_names[];
extern const struct rfb_enum_name rfb_plan_balance_names[];
extern const struct rfb_enum_name rfb_plan_even_names[];
const char *rfb_plan_shuffle_name(enum rfb_plan_shuffle shuffle);
int rfb_plan_shuffle_parse(const char *name);
const char *rfb_plan_balance_name(enum rfb_plan_balance balance);
int rfb_plan_balance_parse(const char *name);
const char *rfb_plan_even_name(enum rfb_plan_even even);
int rfb_plan_even_parse(const char *name);

/*
 * Samples in every epoch of a plan with this header, m: n without --even;
 * with pad ceil(T/N), with drop floor(T/N) (T = total, N = shard_count),
 * so that every shard of N has the same m.
 */
uint32_t rfb_plan_epoch_samples(const rfb_plan_header *h);

/* ---- generating ---- */

typedef struct rfb_plan_params {
	uint32_t batch_size;   /* 1 .. RFB_PLAN_MAX_BATCH */
	uint32_t first_epoch, last_epoch; /* inclusive, first <= last */
	uint64_t seed;
	int shuffle;           /* enum rfb_plan_shuffle */
	int balance;           /* enum rfb_plan_balance; pixels needs
				* cache-aware and a pixel table, cost
				* cache-aware and miss_cost */
	int drop_last;
	int even;              /* enum rfb_plan_even */
	/* balance = cost: the predicted seconds of computing sample id as a
	 * miss in epoch (a pure function: the plan must stay one); called
	 * for every miss of every epoch. */
	double (*miss_cost)(const void *ctx, uint32_t id, uint32_t epoch);
	const void *cost_ctx;
	uint32_t first_step;   /* resume: start first_epoch at this step
				* (below the batches of an epoch) */
	uint64_t cost_identity; /* balance = cost: the cost file's identity,
				 * for the header (the plan's identity) */
} rfb_plan_params;

typedef struct rfb_plan rfb_plan;

/*
 * Start generating the plan of schedule s (which must outlive the plan)
 * with parameters p.  pixels is NULL, or (required for balance = pixels)
 * the pixel count of every sample of the shard, by position in
 * rfb_evict_ids(s); it is copied.  Returns the generator (free with
 * rfb_plan_free) or NULL with err filled (RFB_EINVAL, RFB_ENOMEM).
 * Memory: about 8 bytes per sample of the shard (20 with pixels).
 */
rfb_plan *rfb_plan_new(const rfb_evict *s, const rfb_plan_params *p,
		       const uint32_t *pixels, rfb_err *err) RFB_MUST_CHECK;

/* Release a generator.  NULL accepted. */
void rfb_plan_free(rfb_plan *pl);

/* The header line's content for this plan. */
void rfb_plan_header_of(const rfb_plan *pl, rfb_plan_header *h);

/*
 * The next item of the plan, in stream order: the batches of the first
 * epoch, its epoch summary, the batches of the next epoch ...  Returns
 * RFB_PLAN_LINE_BATCH or RFB_PLAN_LINE_EPOCH with *item filled (the
 * batch's samples belong to the generator and stay valid until the next
 * call), or 0 after the last epoch's summary.
 */
int rfb_plan_next(rfb_plan *pl, rfb_plan_item *item);

/*
 * The order of one whole epoch: fill order (rfb_plan_epoch_samples() of
 * the plan's header entries; with --even one more or one fewer than
 * rfb_evict_count(s)) with positions into rfb_evict_ids(s), batch after
 * batch; with pad, one position appears twice.  This is what
 * rfb_plan_next walks through; exposed for tests and statistics.
 */
void rfb_plan_epoch_order(rfb_plan *pl, uint32_t epoch, uint32_t *order);

/*
 * The sample --even drop leaves out of epoch e of schedule s: a position
 * into rfb_evict_ids(s) (refurb-plan(5), HOW THE PLAN IS MADE).  Defined
 * for any schedule; the plan uses it only in the larger shards of N.
 */
uint32_t rfb_plan_drop_position(const rfb_evict *s, uint32_t epoch);

/*
 * Miss pixels of each sample of s's shard (by position), saturated to
 * UINT32_MAX, from a per-id pixel function (e.g. rfb_index_pixels via a
 * small wrapper).  Returns a malloc'ed array (caller frees) or NULL on
 * allocation failure.
 */
uint32_t *rfb_plan_pixel_table(const rfb_evict *s,
			       uint64_t (*pixels_of)(const void *ctx,
						     uint32_t id),
			       const void *ctx);

/* ---- text ---- */

/*
 * Format the header line (with its '\n') into buf of size n.  Returns the
 * length it needs, like snprintf (the line is cut if n is too small).
 */
size_t rfb_plan_format_header(char *buf, size_t n, const rfb_plan_header *h);

/* Bytes rfb_plan_format_batch may write for a batch of count samples. */
size_t rfb_plan_batch_text_max(uint32_t count);

/*
 * Format batch b as a B or D line (with its '\n') into buf, which must
 * hold rfb_plan_batch_text_max(b->count) bytes.  Addresses are written
 * for the samples that have them.  Returns the bytes written.
 */
size_t rfb_plan_format_batch(char *buf, const rfb_plan_batch *b);

/* Format an E line (with '\n') into buf of size n; like snprintf. */
size_t rfb_plan_format_epoch_end(char *buf, size_t n,
				 const rfb_plan_epoch_end *e);

/* Kind of a line from its first bytes (RFB_PLAN_LINE_*), 0 if none. */
int rfb_plan_line_type(const char *line, size_t len);

/*
 * Parse one line (len bytes, without the '\n'; need not be
 * NUL-terminated).  The header parser ignores key=value fields it does
 * not know and checks that the ones it knows agree with each other.  The
 * batch parser stores at most capacity samples into b->samples (which the
 * caller sets) and fails with RFB_ELIMIT beyond.  All return 0 or
 * RFB_EFORMAT / RFB_EVERSION / RFB_ELIMIT with err->msg saying which
 * column is wrong and why (err->path is left empty).
 */
int rfb_plan_parse_header(const char *line, size_t len, rfb_plan_header *h,
			  rfb_err *err) RFB_MUST_CHECK;
int rfb_plan_parse_batch(const char *line, size_t len, rfb_plan_batch *b,
			 uint32_t capacity, rfb_err *err) RFB_MUST_CHECK;
int rfb_plan_parse_epoch_end(const char *line, size_t len,
			     rfb_plan_epoch_end *e,
			     rfb_err *err) RFB_MUST_CHECK;

/* ---- reading a stream ---- */

typedef struct rfb_plan_reader rfb_plan_reader;

/*
 * Start reading a plan stream from fd (not closed by the reader; name is
 * used in errors).  Reads and checks the header line.  Returns the reader
 * (close with rfb_plan_reader_close) or NULL with err filled.
 */
rfb_plan_reader *rfb_plan_reader_open(int fd, const char *name, rfb_err *err) RFB_MUST_CHECK;

/* Release a reader.  NULL accepted. */
void rfb_plan_reader_close(rfb_plan_reader *r);

/* The header (owned by the reader). */
const rfb_plan_header *rfb_plan_reader_header(const rfb_plan_reader *r);

/*
 * The next batch or epoch summary.  Checks the sequence against the
 * header: epochs in order and in range, steps and global steps
 * consecutive, batch sizes, only the last batch of an epoch dropped (and
 * only with drop-last), ids below the index size and each at most once
 * per epoch, summaries that agree with the batches.  Comment lines are
 * skipped.  Returns RFB_PLAN_LINE_BATCH or RFB_PLAN_LINE_EPOCH with *item
 * filled (samples owned by the reader, valid until the next call), 0
 * after the last epoch's summary and the end of the stream, or a negative
 * RFB_E* code with err filled ("NAME: line N: reason"); a stream that
 * stops early is RFB_ETRUNC.  After an error the reader can only be
 * closed.
 */
int rfb_plan_reader_next(rfb_plan_reader *r, rfb_plan_item *item,
			 rfb_err *err) RFB_MUST_CHECK;

/* Raw text of the line last returned (without '\n'; right after
 * rfb_plan_reader_open, the header line) and its number; valid until the
 * next call.  A stage that passes lines on unchanged copies this. */
const char *rfb_plan_reader_line(const rfb_plan_reader *r, size_t *len);
uint64_t rfb_plan_reader_line_number(const rfb_plan_reader *r);

#ifdef __cplusplus
}
#endif

#endif

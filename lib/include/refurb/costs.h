/*
 * costs.h - measured costs of the partial augmentation, per sample, and
 * the model that predicts the cost of any miss from them.
 *
 * refurb-partial --costs FILE appends, for every sample it computes, the
 * thread CPU time the worker spent on it (read the file, decode, the
 * partial pipeline, encode the record).  The file is TSV (refurb-costs(5)):
 *
 *   #refurb-costs 1 index=<16 hex digits> seed=<N> pipeline=<canonical spec>
 *   <id> TAB <epoch> TAB <microseconds>
 *   ...
 *
 * appended across runs (later runs check the header and add lines).
 * refurb-plan --balance cost=FILE fits the model (rfb_cost_model) and
 * deals every epoch's misses so that every batch's predicted miss cost is
 * the same.  The model, fitted on the measured samples:
 *
 *   cost(id, epoch) = base(id) + sum over the randaug/trivialaug layers l
 *                     of op_cost[op drawn by l for (seed, epoch, id)]
 *
 * op_cost by least squares on the differences between a sample's own
 * measurements (what changes from one epoch to the next is the ops drawn);
 * base(id) the sample's mean minus its ops; for a sample never measured,
 * base from a linear fit on the measured ones of its pixels, bytes,
 * grayscale and chroma subsampling (the index's fields).
 */
#ifndef REFURB_COSTS_H
#define REFURB_COSTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "refurb/error.h"
#include "refurb/index.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RFB_COSTS_VERSION 1
#define RFB_COSTS_MAGIC "#refurb-costs"
/* Largest cost file read (bytes). */
#define RFB_COSTS_MAX_FILE ((size_t)1 << 34)

struct rfb_costs_header {
	unsigned version;
	uint64_t index_identity;
	uint64_t seed;          /* the augmentation seed of the run */
	char pipeline[4096];    /* canonical partial pipeline */
};

struct rfb_cost_entry {
	uint32_t id, epoch;     /* sample, its record's write epoch */
	uint32_t cpu_us;        /* thread CPU microseconds */
};

typedef struct rfb_costs rfb_costs;

/*
 * Load and check a cost file: header, every line (a last line without
 * its newline, torn by a crash, is ignored).  Returns the handle (free
 * with rfb_costs_free) or NULL with err filled (RFB_EFORMAT with the line
 * number, RFB_EVERSION, RFB_EIO, RFB_ELIMIT).
 */
rfb_costs *rfb_costs_open(const char *path, rfb_err *err) RFB_MUST_CHECK;

/* Same, from len bytes at data (need not be NUL-terminated; name is
 * used in errors). */
rfb_costs *rfb_costs_open_mem(const void *data, size_t len, const char *name,
			      rfb_err *err) RFB_MUST_CHECK;

/* Free.  NULL accepted. */
void rfb_costs_free(rfb_costs *c);

const struct rfb_costs_header *rfb_costs_header_of(const rfb_costs *c);
size_t rfb_costs_count(const rfb_costs *c);
const struct rfb_cost_entry *rfb_costs_entries(const rfb_costs *c);

/* Identity of c's content (header and measurements, in file order): two
 * cost files give the same fitted model, hence the same plan with
 * refurb-plan --balance cost, when their identities are equal. */
uint64_t rfb_costs_identity(const rfb_costs *c);

/* ---- writing ---- */

typedef struct rfb_costs_writer rfb_costs_writer;

/*
 * Open path for appending.  A new or empty file gets h's header line; an
 * existing one must have the same index, seed and pipeline
 * (RFB_EMISMATCH, naming the one that differs) and is appended to.
 * Returns the writer or NULL with err filled.
 */
rfb_costs_writer *rfb_costs_writer_open(const char *path,
					const struct rfb_costs_header *h,
					rfb_err *err) RFB_MUST_CHECK;

/* Add a line (buffered). */
void rfb_costs_writer_add(rfb_costs_writer *w, uint32_t id, uint32_t epoch,
			  double seconds);

/* Write the buffered lines.  Returns 0 or RFB_EIO/RFB_ENOSPC. */
int rfb_costs_writer_flush(rfb_costs_writer *w, rfb_err *err) RFB_MUST_CHECK;

/* Flush and close.  Returns 0 or a negative code; NULL accepted. */
int rfb_costs_writer_close(rfb_costs_writer *w, rfb_err *err) RFB_MUST_CHECK;

/* ---- the model ---- */

typedef struct rfb_cost_model rfb_cost_model;

/* What a fit found (for messages and tests). */
struct rfb_cost_model_info {
	uint32_t samples;         /* samples of the index */
	uint32_t measured;        /* of them with at least one measurement */
	uint64_t entries;         /* measurements used */
	int random_layers;        /* randaug/trivialaug layers of the pipeline */
	double op_cost[16];       /* seconds per enum rfb_op (relative: the
				   * mean is folded into the bases) */
	double base_mean;         /* mean base cost of the measured samples */
};

/*
 * Fit the model of c for idx.  A cost file made for another index is
 * RFB_EMISMATCH; ids beyond the index RFB_EFORMAT; a file without a
 * measurement RFB_EINVAL.  Returns the model (free with
 * rfb_cost_model_free) or NULL with err filled.
 */
rfb_cost_model *rfb_cost_model_fit(const rfb_costs *c, const rfb_index *idx,
				   rfb_err *err) RFB_MUST_CHECK;

void rfb_cost_model_free(rfb_cost_model *m);

void rfb_cost_model_info_of(const rfb_cost_model *m,
			    struct rfb_cost_model_info *info);

/*
 * Predicted seconds of computing sample id for epoch with augmentation
 * seed (the ops of the random layers are drawn as refurb-partial draws
 * them).  Never negative.
 */
double rfb_cost_model_predict(const rfb_cost_model *m, uint32_t id,
			      uint32_t epoch, uint64_t seed);

#ifdef __cplusplus
}
#endif

#endif

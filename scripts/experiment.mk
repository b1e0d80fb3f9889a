# scripts/experiment.mk - drive a grid of refurb experiments with make.
#
#   make -f scripts/experiment.mk [-j2] [DATA=DIR] [RS="1 2 3"] [SPLITS="1 2 3"]
#        [EPOCHS=5] [RUNS=1] [BATCH=64] [CPUS=0,1] [N=600] [RESULTS=results]
#   make -f scripts/experiment.mk help | clean
#
# Every cell of the grid, reuse factor R x split policy S (S = the number
# of final layers, as scripts/bench defines them: 1 = final 'crop=224,flip',
# 2 and 3 = one or two RandAugment ops moved from the partial to the final
# pipeline), is one target, RESULTS/rR-splitS.tsv, made by one
# `scripts/bench --cell R:S` run: a one-row table (images/s, images per
# CPU-second, per-batch CV, cache bytes, misses per epoch ...; the columns
# of scripts/bench).  The cells are independent files, so `make -j` runs
# them side by side and an interrupted grid resumes where it stopped
# (finished cells are not redone; `touch` a cell's inputs or delete it to
# redo it).  The last rule joins the cells into RESULTS/grid.tsv, adds
# each cell's speedup in images per CPU-second over the r=1 split=1 cell,
# and prints the main columns.
#
# DATA is any ImageFolder tree; by default a synthetic one of N images is
# made once in RESULTS/data.  EPOCHS must be at least the largest R + 2.
# Timing: cells running side by side share the cores (each bench pins its
# processes to CPUS, default all); per CPU-second figures stay comparable,
# wall-clock ones do not: use -j1 for those, or give each job its cores.

TOP     := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))..)
RS      ?= 1 2 3
SPLITS  ?= 1 2 3
EPOCHS  ?= 5
RUNS    ?= 1
BATCH   ?= 64
N       ?= 600
CPUS    ?=
RESULTS ?= results
DATA    ?= $(RESULTS)/data
BENCH   := $(TOP)/scripts/bench

CELLS    := $(foreach r,$(RS),$(foreach s,$(SPLITS),$(RESULTS)/r$(r)-split$(s).tsv))
DATA_DEP := $(if $(filter $(RESULTS)/data,$(DATA)),$(RESULTS)/data/.complete)

.PHONY: all build help clean
.DELETE_ON_ERROR:

all: $(RESULTS)/grid.tsv

help:
	@sed -n '2,26p' $(lastword $(MAKEFILE_LIST)) | sed 's/^# \{0,1\}//'

build:
	@$(MAKE) -s -C $(TOP) all

$(RESULTS)/data/.complete: | build
	@mkdir -p $(RESULTS)
	@echo "experiment: making $(N) synthetic images in $(RESULTS)/data"
	@$(TOP)/scripts/make-dataset -n $(N) -k 10 --min 200 --max 600 $(RESULTS)/data
	@touch $@

# one cell: the stem is R-splitS
$(RESULTS)/r%.tsv: $(DATA_DEP) | build
	@mkdir -p $(RESULTS)
	@echo "experiment: cell r=$(word 1,$(subst -split, ,$*)) split=$(word 2,$(subst -split, ,$*))"
	@$(BENCH) --no-build --cell $(subst -split,:,$*) -e $(EPOCHS) -R $(RUNS) -b $(BATCH) \
		$(if $(CPUS),--cpus $(CPUS)) -o $(RESULTS)/r$*.d --tsv $@ $(DATA) \
		> $(RESULTS)/r$*.txt 2> $(RESULTS)/r$*.log

# join: one header, the cells' rows, the speedup over r=1 split=1
$(RESULTS)/grid.tsv: $(CELLS)
	@awk -F'\t' -v OFS='\t' ' \
		FNR == 1 { if (NR == 1) { for (i = 1; i <= NF; i++) col[$$i] = i; \
			   print $$0, "x_r1_split1_cpu" }; next } \
		{ row[++n] = $$0; v[n] = $$col["images_per_cpu_s"]; \
		  if ($$col["setting"] == "r1-split1") base = v[n] } \
		END { for (i = 1; i <= n; i++) \
			print row[i], base ? sprintf("%.3f", v[i] / base) : "-" }' \
		$^ > $@.tmp && mv $@.tmp $@
	@echo "experiment: $(words $(CELLS)) cells joined into $@"
	@awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) col[$$i] = i; \
		  printf "%-12s %-28s %-34s %9s %9s %8s %11s %9s\n", "cell", "partial", \
		  "final", "img/s", "img/CPU-s", "batchCV", "cache_bytes", "x_r1s1"; next } \
		{ printf "%-12s %-28s %-34s %9s %9s %8s %11s %9s\n", $$col["setting"], \
		  $$col["partial"], $$col["final"], $$col["images_per_s"], \
		  $$col["images_per_cpu_s"], $$col["batch_time_cv"], \
		  $$col["cache_bytes"], $$col["x_r1_split1_cpu"] }' $@

clean:
	rm -rf $(RESULTS)/r*-split*.tsv $(RESULTS)/r*-split*.d $(RESULTS)/r*-split*.txt \
		$(RESULTS)/r*-split*.log $(RESULTS)/grid.tsv

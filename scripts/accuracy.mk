# scripts/accuracy.mk - the accuracy experiment (doc/accuracy.md) with make.
#
#   make -f scripts/accuracy.mk [-j2] [RESULTS=build/accuracy] [SEEDS="1 2 ... 8"]
#        [DATASETS="fashion photos"] [CELLS="floor standard ..."] [PHOTOS=IMAGEFOLDER]
#        [FASHION_TRAIN=1000] [FASHION_TEST=10000] [FASHION_EPOCHS=40]
#        [PHOTOS_EPOCHS=100] [FASHION_BATCH=64] [PHOTOS_BATCH=32]
#        [THREADS=1] [DEVICE=cpu]
#   make -f scripts/accuracy.mk report     # the report of the cells done so far
#   make -f scripts/accuracy.mk help | clean
#
# Every (dataset, cell, seed) is one target, RESULTS/cells/DATASET/CELL-sSEED.csv,
# made by one `scripts/accuracy train` run and written atomically: an
# interrupted grid resumes where it stopped (finished cells are kept;
# delete a cell's file to redo it).  The targets are ordered seed by
# seed, so a grid stopped early has whole seeds of every cell.  Then
# RESULTS/results.csv joins the cells (one row per dataset, cell and
# seed) and scripts/accuracy-report writes RESULTS/report.md (mean,
# standard deviation, 95% confidence interval, the paired t-test by seed
# and Welch's t-test against standard augmentation) and
# RESULTS/accuracy.png (if matplotlib is installed: scripts/deps --plot).
# `report` does the same from the cells that exist, without training.
#
# The datasets are prepared once in RESULTS/data/DATASET: fashion is a
# subset of Fashion-MNIST (FASHION_TRAIN and FASHION_TEST images);
# photos is PHOTOS (an ImageFolder; its data and cells are then
# RESULTS/data/photos-NAME and RESULTS/cells/photos-NAME, NAME the
# folder's basename) or, by default, scripts/fetch-photos' set; at 72
# pixels.  The defaults take about an hour on 2 idle cores
# with -j2 (doc/accuracy.md); THREADS is each run's torch and refurb -j.

TOP       := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))..)
RESULTS   ?= $(TOP)/build/accuracy
SEEDS     ?= 1 2 3 4 5 6 7 8
DATASETS  ?= fashion photos
CELLS     ?= floor standard refurb2 refurb3 refurb4 echo2 echo3 torchvision
PHOTOS    ?=
FASHION_TRAIN  ?= 1000
FASHION_TEST   ?= 10000
FASHION_EPOCHS ?= 40
FASHION_BATCH  ?= 64
PHOTOS_EPOCHS  ?= 100
PHOTOS_BATCH   ?= 32
THREADS   ?= 1
DEVICE    ?= cpu
ACCURACY  := $(TOP)/scripts/accuracy
REPORT    := $(TOP)/scripts/accuracy-report

# a PHOTOS folder has its own data and cells: photos-NAME (NAME its basename)
PHOTOS_KEY := $(if $(PHOTOS),photos-$(notdir $(abspath $(PHOTOS))),photos)
DSETS      := $(patsubst photos,$(PHOTOS_KEY),$(DATASETS))

# seed by seed, then dataset by dataset, then cell by cell
TARGETS := $(foreach s,$(SEEDS),$(foreach d,$(DSETS),$(foreach c,$(CELLS),\
	$(RESULTS)/cells/$(d)/$(c)-s$(s).csv)))

.PHONY: all report build help clean
.DELETE_ON_ERROR:

all: $(RESULTS)/report.md

help:
	@awk 'NR > 1 { if (!/^#/) exit; sub(/^# ?/, ""); print }' $(lastword $(MAKEFILE_LIST))

# REFURB_BIN=DIR: the programs are there (scripts/accuracy runs them): no make
build:
	$(if $(REFURB_BIN),,@$(MAKE) -s -C $(TOP) all)

$(RESULTS)/data/fashion/dataset.json: | build
	@mkdir -p $(RESULTS)/data
	@$(ACCURACY) prepare fashion $(RESULTS)/data/fashion --train $(FASHION_TRAIN) \
		--test $(FASHION_TEST)

$(RESULTS)/data/$(PHOTOS_KEY)/dataset.json: | build
	@mkdir -p $(RESULTS)/data
	@$(ACCURACY) prepare photos $(RESULTS)/data/$(PHOTOS_KEY) $(if $(PHOTOS),--from $(PHOTOS))

# one cell: RESULTS/cells/DATASET/CELL-sSEED.csv
define cell_rule
$(RESULTS)/cells/$(1)/%.csv: $(RESULTS)/data/$(1)/dataset.json | build
	@mkdir -p $$(@D)
	@$(ACCURACY) train $(RESULTS)/data/$(1) --cell $$(firstword $$(subst -s, ,$$*)) \
		--seed $$(lastword $$(subst -s, ,$$*)) --epochs $(2) --batch $(3) \
		--threads $(THREADS) --device $(DEVICE) -o $$@ 2> $$(@:.csv=.log) || \
		{ tail -5 $$(@:.csv=.log) >&2; exit 1; }
endef
$(eval $(call cell_rule,fashion,$(FASHION_EPOCHS),$(FASHION_BATCH)))
$(eval $(call cell_rule,$(PHOTOS_KEY),$(PHOTOS_EPOCHS),$(PHOTOS_BATCH)))

# join the cells: one header, one row per cell
JOIN = awk 'FNR > 1 || NR == 1' $(1) > $(RESULTS)/results.csv.tmp && \
	mv $(RESULTS)/results.csv.tmp $(RESULTS)/results.csv

$(RESULTS)/report.md: $(TARGETS)
	@$(call JOIN,$^)
	@$(REPORT) $(RESULTS)/results.csv --md $@ --png $(RESULTS)/accuracy.png

report:
	@test -n "$(wildcard $(RESULTS)/cells/*/*.csv)" || \
		{ echo "accuracy.mk: no cells done in $(RESULTS)/cells: run the grid first" >&2; exit 1; }
	@$(call JOIN,$(sort $(wildcard $(RESULTS)/cells/*/*.csv)))
	@$(REPORT) $(RESULTS)/results.csv --md $(RESULTS)/report.md --png $(RESULTS)/accuracy.png

clean:
	rm -rf $(RESULTS)/cells $(RESULTS)/results.csv $(RESULTS)/report.md $(RESULTS)/accuracy.png

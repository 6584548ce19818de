# plb: one entry point. `make` builds, `make test` runs every test, `make demo`
# runs plb-mm under mpirun on config/demo.ini, then the simulator on the
# paper's five-machine cluster with every policy (`make demo APP=bs`, kmeans
# or grn: that app's demo instead),
# `make bench` prints the benchmark figures (`make bench-robust` its 200 drawn
# clusters alone), `make bench-cpu` plb-mm against one BLAS call, `make bench-bs`
# `make bench-grn` and `make bench-kmeans` those apps' figures, `make bench-gpu` the GPU ones, `make bench-opencl` the OpenCL ones, `make bench-pipeline` the pipeline schedulers', `make bench-hpart` hierarchical partitioning's, `make bench-coexec` a node's PUs together against each alone. Missing Debian packages are
# installed first (scripts/install-deps.sh). Options:
#   V=1                  show commands
#   SANITIZE=address,undefined | SANITIZE=thread
#   WERROR=1             warnings are errors (CI sets it)
#   CUDA=0               do not build CUDA code even when nvcc is found
#   CUDA_ARCH="75 80 90" the GPU generations (compute capabilities) the CUDA
#                        code carries machine code for; PTX of the last is
#                        added for newer GPUs (those nvcc does not know are
#                        dropped, saying so)
#   OPENCL=0             do not build OpenCL code even when it is found
#   OPENCV=0             do not build plb-nuclei (OpenCV's image operations) even when found
#   MPI=0                build without MPI: apps run in one process only
#   TEST_STRICT_SKIPS=1  make test fails a skip but for a part the build or
#                        node lacks (no MPI, no CUDA, no GPU; CI sets it)
# CUDA code (kernels/*/*.cu, the cuda device class) is built when
# scripts/cuda-probe.sh finds a whole toolkit (nvcc, headers, cuBLAS), and C
# files then see PLB_HAVE_CUDA. docs/ARCHITECTURE.md explains the layers.

BUILD   ?= build
CC      ?= cc
OPT     ?= -O2
CFLAGS  := -std=c11 $(OPT) -g -Wall -Wextra -Wshadow -Wstrict-prototypes \
           -Wno-unused-parameter -fvisibility=hidden -fPIC -D_POSIX_C_SOURCE=200809L \
           -Iinclude -I. -MMD -MP $(EXTRA_CFLAGS)
LDFLAGS := $(EXTRA_LDFLAGS)
ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif
ifneq ($(SANITIZE),)
CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS += -fsanitize=$(SANITIZE)
endif

# scripts/cuda-probe.sh checks that nvcc, the headers and the libraries of
# the CUDA runtime and cuBLAS are all there and link; anything less builds
# without CUDA, saying why.
ifeq ($(CUDA),0)
NVCC    :=
else
CUDA_PROBE := $(shell sh scripts/cuda-probe.sh '$(CC)')
ifeq ($(firstword $(CUDA_PROBE)),none:)
NVCC    :=
ifneq ($(wordlist 1,4,$(CUDA_PROBE)),none: nvcc not found)
$(warning plb: building without CUDA: $(wordlist 2,100,$(CUDA_PROBE)))
endif
else
NVCC        := $(word 1,$(CUDA_PROBE))
CUDA_INCDIR := $(word 2,$(CUDA_PROBE))
CUDA_LIBDIR := $(word 3,$(CUDA_PROBE))
endif
endif
HAVE_CUDA := $(if $(NVCC),1,0)
ifeq ($(HAVE_CUDA),1)
# machine code for each generation of CUDA_ARCH: a GPU runs the code of
# its major generation (sm_80's runs on 8.6 and 8.9); a newer one than the
# last JIT-compiles its PTX at the first launch
comma      := ,
CUDA_ARCH  ?= 75 80 90
CUDA_KNOWN := $(patsubst compute_%,%,$(shell $(NVCC) --list-gpu-arch 2>/dev/null))
CUDA_ARCHS := $(if $(CUDA_KNOWN),$(filter $(CUDA_KNOWN),$(CUDA_ARCH)),$(CUDA_ARCH))
ifneq ($(filter-out $(CUDA_ARCHS),$(CUDA_ARCH)),)
$(warning plb: $(NVCC) does not build for compute capability $(filter-out $(CUDA_ARCHS),$(CUDA_ARCH)): left out of CUDA_ARCH)
endif
NVCCFLAGS := -std=c++17 -O2 -Iinclude -I. -I$(CUDA_INCDIR) \
             $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$a$(comma)code=sm_$a) \
             $(if $(CUDA_ARCHS),-gencode arch=compute_$(lastword $(CUDA_ARCHS))$(comma)code=compute_$(lastword $(CUDA_ARCHS))) \
             $(EXTRA_NVCCFLAGS)
CFLAGS    += -DPLB_HAVE_CUDA
CUDA_LIBS := -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcublas -lcudart -lstdc++
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

BAL_LIBS := -lnlopt -llapacke -llapack -lblas -lm
RT_LIBS  := -linih -lcjson
# glibc's vector math (libmvec), where the C library has it
MVEC      := $(shell printf 'int main(void){return 0;}' | $(CC) -x c - -lmvec -o /dev/null 2>/dev/null && echo -lmvec)
KERN_LIBS := -lblas $(MVEC) $(CUDA_LIBS)
# Evaluated when used, so that a fresh machine gets mpicc installed first.
MPI       ?= 1
ifeq ($(MPI),0)
MPI_LIBS   =
else
CFLAGS    += -DPLB_HAVE_MPI
MPI_CFLAGS = $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS   = $(shell mpicc --showme:link 2>/dev/null)
endif
RUN_LIBS   = $(MPI_LIBS) -lhwloc -lpthread -ldl

# Missing packages are installed before the optional toolkits below are
# looked for, so that a fresh machine builds with OpenCL the first time
# (the rule for $(DEPS_OK) below says why, if this fails).
DEPS_OK   := $(BUILD)/.deps-ok-mpi$(MPI)
ifeq ($(filter clean deps,$(MAKECMDGOALS)),)
DEPS_EARLY := $(shell [ $(DEPS_OK) -nt scripts/install-deps.sh ] || \
  { MPI=$(MPI) OPENCL=$(OPENCL) OPENCV=$(OPENCV) bash scripts/install-deps.sh >&2 && mkdir -p $(BUILD) && touch $(DEPS_OK); })
endif

# OpenCL code (kernels/*/*_opencl.c, the opencl device class) is built
# when scripts/opencl-probe.sh finds the headers, the ICD loader and
# CLBlast; C files then see PLB_HAVE_OPENCL. OPENCL=0 leaves it out.
ifeq ($(OPENCL),0)
OPENCL_PROBE := none: OPENCL=0
else
OPENCL_PROBE := $(shell sh scripts/opencl-probe.sh '$(CC)')
endif
HAVE_OPENCL := $(if $(filter ok,$(OPENCL_PROBE)),1,0)
ifeq ($(HAVE_OPENCL),1)
CFLAGS      += -DPLB_HAVE_OPENCL -DCL_TARGET_OPENCL_VERSION=120
OPENCL_LIBS := -lclblast -lOpenCL
KERN_LIBS   += $(OPENCL_LIBS)
else ifneq ($(OPENCL),0)
$(warning plb: building without OpenCL: $(wordlist 2,100,$(OPENCL_PROBE)))
endif

# OpenCV's image operations (kernels/*/*_opencv.cpp, C++ behind a C
# interface) are built when scripts/opencv-probe.sh finds core and imgproc;
# the apps that need them (OPENCV_APPS) are built only then. OPENCV=0
# leaves them out.
CXX         ?= c++
OPENCV_APPS := nuclei
ifeq ($(OPENCV),0)
OPENCV_PROBE := none: OPENCV=0
else
OPENCV_PROBE := $(shell sh scripts/opencv-probe.sh '$(CXX)')
endif
HAVE_OPENCV := $(if $(filter ok,$(OPENCV_PROBE)),1,0)
CXXFLAGS    := -std=c++17 $(OPT) -g -Wall -Wextra -fvisibility=hidden -fPIC -Iinclude -I. \
               -I/usr/include/opencv4 -MMD -MP
ifeq ($(HAVE_OPENCV),1)
OPENCV_LIBS := -lopencv_imgproc -lopencv_core -lstdc++
KERN_LIBS   += $(OPENCV_LIBS)
else ifneq ($(OPENCV),0)
$(warning plb: building without plb-nuclei: $(wordlist 2,100,$(OPENCV_PROBE)))
endif

# The layers, lowest first: a file includes headers of its own layer, of
# lower ones and of include/ only (test/cli/layers.sh checks it). Each
# layer is one library of every .c file under its folder, but those of a
# layer inside it (balancer/base inside balancer). A file that needs an
# optional toolkit (MPI, CUDA) is always built and holds its own fallback.
LAYERS     := balancer/base balancer runtime/config runtime/transport runtime/device \
              runtime/sim runtime/core
# The bundled apps: apps/NAME/*.c is the program plb-NAME, and
# kernels/NAME/ (*.c, and *.cu with CUDA), if there is one, its kernels.
APPS       := mm null bs kmeans grn $(if $(filter 1,$(HAVE_OPENCV)),$(OPENCV_APPS))
# What the apps link (the simulator engine is not part of a job), and
# what plbsim links, top layer first.
RUN_LAYERS := runtime/core runtime/device runtime/transport runtime/config balancer balancer/base
SIM_LAYERS := runtime/sim runtime/config balancer balancer/base

rwildcard   = $(foreach d,$(wildcard $(1:=/*)),$(call rwildcard,$d,$2) $(filter $(subst *,%,$2),$d))
layer_src   = $(filter-out $(foreach l,$(filter $1/%,$(LAYERS)),$l/%),$(call rwildcard,$1,*.c))
layer_lib   = $(BUILD)/lib/libplb-$(notdir $1).a
layer_libs  = $(foreach l,$1,$(call layer_lib,$l))
kern_src    = $(if $(filter $(OPENCV_APPS),$1),$(if $(filter 1,$(HAVE_OPENCV)),$(kern_all)),$(kern_all))
kern_all    = $(filter-out %_opencl.c,$(wildcard kernels/$1/*.c)) $(if $(NVCC),$(wildcard kernels/$1/*.cu)) \
              $(if $(filter 1,$(HAVE_OPENCL)),$(wildcard kernels/$1/*_opencl.c)) \
              $(if $(filter 1,$(HAVE_OPENCV)),$(wildcard kernels/$1/*_opencv.cpp))
kern_lib    = $(if $(strip $(call kern_src,$1)),$(BUILD)/lib/libplbkern-$1.a)
obj         = $(patsubst %.c,$(BUILD)/%.o,$(patsubst %.cu,$(BUILD)/%.cu.o,$(patsubst %.cpp,$(BUILD)/%.cpp.o,$1)))

KERNELS   := $(patsubst kernels/%/,%,$(wildcard kernels/*/))
APP_BINS  := $(APPS:%=$(BUILD)/plb-%)
# test_nuclei tests plb-nuclei's kernels: only where they are built
TEST_SRC  := $(filter-out $(if $(filter 1,$(HAVE_OPENCV)),,test/unit/test_nuclei.c),$(wildcard test/unit/test_*.c))
BENCH_SRC := $(wildcard bench/*.c)
# bench/*.cu call CUDA libraries directly, without plb: the references the
# GPU figures are compared with (bench/gpu.sh).
BENCH_CU  := $(if $(NVCC),$(wildcard bench/*.cu))
TESTS     := $(TEST_SRC:test/unit/%.c=$(BUILD)/test/%)
BENCHES   := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%) $(BENCH_CU:bench/%.cu=$(BUILD)/bench/%)
PLBSIM    := $(BUILD)/plbsim
# libplb (see its rules below)
# plb's version and ABI (the soname's number) are plb.h's
plb_h_num      = $(shell sed -n 's/^\#define PLB_$1 \([0-9]*\)$$/\1/p' include/plb.h)
PLB_VERSION   := $(call plb_h_num,VERSION_MAJOR).$(call plb_h_num,VERSION_MINOR).$(call plb_h_num,VERSION_PATCH)
PLB_SOVERSION := $(call plb_h_num,ABI)
LIBPLB_A  := $(BUILD)/lib/libplb.a
LIBPLB_SO := $(BUILD)/lib/libplb.so.$(PLB_SOVERSION)
ALL_TOP   := $(call layer_libs,runtime/sim $(RUN_LAYERS))
ALL_KERN  := $(foreach k,$(KERNELS),$(call kern_lib,$k))
ALL_OBJ   := $(call obj,$(foreach l,$(LAYERS),$(call layer_src,$l)) \
             $(foreach k,$(KERNELS),$(call kern_src,$k)) $(wildcard apps/*/*.c) \
             $(TEST_SRC) $(BENCH_SRC))

.PHONY: all install uninstall test demo bench bench-robust bench-hosts bench-links bench-iterations bench-cpu bench-bs bench-grn bench-kmeans bench-gpu bench-opencl bench-pipeline bench-hpart bench-mm2d bench-coexec clean deps layers coverage mutants faults fuzz
all: $(PLBSIM) $(APP_BINS) $(TESTS) $(BENCHES) $(LIBPLB_A) $(LIBPLB_SO)

# Installs what is missing; re-checked when the script changes.
$(DEPS_OK): scripts/install-deps.sh
	$(Q)MPI=$(MPI) OPENCL=$(OPENCL) OPENCV=$(OPENCV) bash scripts/install-deps.sh
	$(Q)mkdir -p $(@D) && touch $@
deps: $(DEPS_OK)

# Objects built before this stamp (an older build directory, without
# -fPIC, which libplb.so needs) are rebuilt once.
PIC_STAMP := $(BUILD)/.objects-pic
$(PIC_STAMP):
	@mkdir -p $(@D) && touch $@

$(BUILD)/%.o: %.c $(PIC_STAMP) | $(DEPS_OK)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/%.cpp.o: %.cpp $(PIC_STAMP) | $(DEPS_OK)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CXX     $<")
	$(Q)$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/%.cu.o: %.cu $(PIC_STAMP) | $(DEPS_OK)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  NVCC    $<")
	$(Q)$(NVCC) $(NVCCFLAGS) -MMD -MF $(@:.o=.d) -c $< -o $@

# The one file with mpi.h, and the one runtime file with CUDA headers.
$(BUILD)/runtime/transport/mpi.o: CFLAGS += $(MPI_CFLAGS)
# It loads the CUDA runtime when a config asks for a GPU (never linked):
# by the soname of the toolkit's libcudart, else from the toolkit's folder.
ifeq ($(HAVE_CUDA),1)
CUDART_SONAME := $(shell objdump -p $(CUDA_LIBDIR)/libcudart.so 2>/dev/null | sed -n 's/^ *SONAME *//p')
$(BUILD)/runtime/device/cuda.o: CFLAGS += -I$(CUDA_INCDIR) \
  -DPLB_CUDART='"$(or $(CUDART_SONAME),libcudart.so)"' -DPLB_CUDART_DIR='"$(CUDA_LIBDIR)"'
endif
# Black-Scholes' loops: vectorised with glibc's vector exp and log (see
# kernels/bs/bs_simd.c); only that file, never the checks.
$(BUILD)/kernels/bs/bs_simd.o: CFLAGS += -O3 -ffast-math -fopenmp-simd
# Gene-network inference: the CPU walk at -O3; the CUDA kernel without
# fused multiply-adds, so that its scores are the CPU's to the bit.
$(BUILD)/kernels/grn/grn_cpu.o: CFLAGS += -O3 -ffp-contract=off
$(BUILD)/kernels/grn/grn_cuda.cu.o: NVCCFLAGS += --fmad=false
# plb-nuclei's device operations: the CPU's output to the bit
$(BUILD)/kernels/nuclei/nuclei_cuda.cu.o: NVCCFLAGS += --fmad=false

# archive_rule LIB, SOURCES: LIB holds exactly the objects of SOURCES.
define archive_rule
$1: $(call obj,$2)
	@mkdir -p $$(@D)
	$$(Q)rm -f $$@ && $$(AR) rcs $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call archive_rule,$(call layer_lib,$l),$(call layer_src,$l))))
$(foreach k,$(KERNELS),$(if $(call kern_lib,$k),$(eval $(call archive_rule,$(call kern_lib,$k),$(call kern_src,$k)))))

# libplb, what an app built outside the tree links (make install): the
# runtime's layers in one archive and one shared library that exports the
# task API only (plb.h; everything else is hidden). Neither holds a kernel
# or needs the CUDA runtime.
$(eval $(call archive_rule,$(LIBPLB_A),$(foreach l,$(RUN_LAYERS),$(call layer_src,$l))))
$(LIBPLB_SO): $(call obj,$(foreach l,$(RUN_LAYERS),$(call layer_src,$l)))
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,$(@F) $(if $(SANITIZE),,-Wl,--no-undefined) $(LDFLAGS) \
	  -o $@ $^ $(RUN_LIBS) $(RT_LIBS) $(BAL_LIBS)
# What pkg-config --libs --static adds to -lplb: the libraries libplb uses,
# and the link flags its objects were built for (EXTRA_LDFLAGS: make
# coverage's --coverage, whose objects call libgcov).
LIBPLB_PRIVATE = $(RUN_LIBS) $(RT_LIBS) $(BAL_LIBS) $(EXTRA_LDFLAGS)

define app_rule
$(BUILD)/plb-$1: $(call obj,$(wildcard apps/$1/*.c)) $(call kern_lib,$1) $(call layer_libs,$(RUN_LAYERS))
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(RUN_LIBS) $$(RT_LIBS) $$(KERN_LIBS) $$(BAL_LIBS)
endef
$(foreach a,$(APPS),$(eval $(call app_rule,$a)))

$(PLBSIM): $(call obj,$(wildcard apps/plbsim/*.c)) $(call layer_libs,$(SIM_LAYERS))
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(RT_LIBS) $(BAL_LIBS)

# test_runtime runs the runtime in one process, and corrupts a grant
# through the linker to prove plb_run's coverage check.
$(BUILD)/test/test_runtime: TEST_LIBS = $(RUN_LIBS) -Wl,--wrap=plb__balancer_next
# test_pipeline runs pipelines in one process.
$(BUILD)/test/test_pipeline: TEST_LIBS = $(RUN_LIBS)
# test_mm2d runs 2-D products in one process.
$(BUILD)/test/test_mm2d: TEST_LIBS = $(RUN_LIBS)
# test_mpi_settle runs itself under mpirun: the MPI transport on two ranks.
$(BUILD)/test/test_mpi_settle: TEST_LIBS = $(RUN_LIBS)
# test_alloc fails each allocation of a balancer's job in turn.
$(BUILD)/test/test_alloc: TEST_LIBS = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free
$(BUILD)/test/%: $(BUILD)/test/unit/%.o $(ALL_TOP) $(ALL_KERN)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(ALL_KERN) $(ALL_TOP) -lcmocka $(TEST_LIBS) $(RT_LIBS) $(KERN_LIBS) $(BAL_LIBS) -lhwloc -lpthread -ldl

$(BUILD)/bench/%: $(BUILD)/bench/%.cu.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(CUDA_LIBS) -lm

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(ALL_TOP) $(BENCH_KERN)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(BENCH_KERN) $(ALL_TOP) $(RT_LIBS) $(BAL_LIBS) $(BENCH_LIBS) -lpthread
# plb-bs's reference loop, built for this machine, beside plb's kernel
$(BUILD)/bench/bs_ref.o: CFLAGS += -O3 -ffast-math -fopenmp-simd -march=native
$(BUILD)/bench/bs_ref: $(call kern_lib,bs)
$(BUILD)/bench/bs_ref: BENCH_KERN = $(call kern_lib,bs)
$(BUILD)/bench/bs_ref: BENCH_LIBS = $(MVEC) -lm
# plb-kmeans's BLAS program and plain loop, the loop built for this machine
$(BUILD)/bench/kmeans_ref.o: CFLAGS += -O3 -march=native
$(BUILD)/bench/kmeans_ref: $(call kern_lib,kmeans)
$(BUILD)/bench/kmeans_ref: BENCH_KERN = $(call kern_lib,kmeans)
$(BUILD)/bench/kmeans_ref: BENCH_LIBS = -lblas -lm
# plb-grn's straightforward pair search, built for this machine
$(BUILD)/bench/grn_ref.o: CFLAGS += -O3 -march=native
$(BUILD)/bench/grn_ref: $(call kern_lib,grn)
$(BUILD)/bench/grn_ref: BENCH_KERN = $(call kern_lib,grn)
$(BUILD)/bench/grn_ref: BENCH_LIBS = -lm
# every app's CUDA kernel against its CPU kernel (bench/gpu_kernels.c;
# without CUDA it says so and exits 3)
$(BUILD)/bench/gpu_kernels: $(ALL_KERN)
$(BUILD)/bench/gpu_kernels: BENCH_KERN = $(ALL_KERN)
$(BUILD)/bench/gpu_kernels: BENCH_LIBS = $(KERN_LIBS) -lm

# plb-mm's OpenCL reference: CLBlast called directly (bench/opencl.sh)
$(BUILD)/bench/clblast_mm: BENCH_LIBS = $(OPENCL_LIBS) -lm

# Line and branch coverage per folder (gcc --coverage, gcovr; own build
# directory), and a seeded mutation run over the pure code: both print
# their figures against the targets in docs/TESTING.md.
coverage:
	$(Q)bash scripts/coverage.sh
SEED  ?= 1
COUNT ?= 60
RUNS  ?= 100
FUZZ_S ?= 60
# The config and scenario parser under libFuzzer (clang), FUZZ_S seconds.
fuzz: $(DEPS_OK)
	$(Q)BUILD=$(BUILD) bash scripts/fuzz.sh $(FUZZ_S)
# Fault injection: plb-mm --verify under mpirun --enable-recovery, RUNS runs
# each with a drawn fault (scripts/fault-runs.py; make test runs ten).
faults: all
	$(Q)python3 scripts/fault-runs.py --runs $(RUNS) --seed $(SEED) --build $(BUILD)
mutants:
	$(Q)python3 scripts/mutants.py --seed $(SEED) --count $(COUNT)

test: all
	$(Q)PLBSIM=$(PLBSIM) BUILD=$(BUILD) MPI=$(MPI) HAVE_CUDA=$(HAVE_CUDA) HAVE_OPENCL=$(HAVE_OPENCL) SANITIZE=$(SANITIZE) \
	  TEST_PROGRAMS="$(notdir $(TESTS))" TEST_STRICT_SKIPS=$(TEST_STRICT_SKIPS) bash test/run.sh

demo: $(PLBSIM) $(APP_BINS)
	$(Q)BUILD=$(BUILD) MPI=$(MPI) APP=$(APP) bash scripts/demo.sh

bench: all
	$(Q)PLBSIM=$(PLBSIM) BUILD=$(BUILD) bash bench/run.sh

# The robustness section of make bench alone: every policy on 200 clusters
# drawn by scripts/gen-cluster.py (figures also in $(BUILD)/bench-robust.json).
bench-robust: all
	$(Q)PLBSIM=$(PLBSIM) python3 scripts/robust-bench.py --json $(BUILD)/bench-robust.json

# 64 worker ranks, and four emulated hosts (network namespaces; root):
# the runtime's ratio against plbsim's.
bench-hosts: all
	$(Q)BUILD=$(BUILD) bash bench/hosts.sh

# the master's link as the limit: four emulated hosts, the master's link shaped by tc
bench-links: all
	$(Q)BUILD=$(BUILD) bash bench/links.sh

# plb-mm's 2-D product against its 1-D one: five emulated hosts, shaped links
bench-mm2d: all
	$(Q)BUILD=$(BUILD) bash bench/mm2d.sh

# An iterative job on the demo cluster: models kept between runs, or not.
bench-iterations: all
	$(Q)BUILD=$(BUILD) MPI=$(MPI) bash bench/iterations.sh

# plb-mm on this node's cores against one BLAS call on the same cores.
bench-cpu: all
	$(Q)BUILD=$(BUILD) bash bench/cpu.sh

# plb-bs: its kernel against a vectorised loop, one process against a
# direct call, the demo cluster.
bench-bs: all
	$(Q)BUILD=$(BUILD) MPI=$(MPI) bash bench/bs.sh

# plb-grn: its kernel against a straightforward pair search, one process
# against a direct call, the demo cluster.
bench-grn: all
	$(Q)BUILD=$(BUILD) MPI=$(MPI) bash bench/grn.sh

# plb-kmeans: its kernel against a BLAS program and a plain loop, one
# process against a direct call, the demo cluster's iterations.
bench-kmeans: all
	$(Q)BUILD=$(BUILD) MPI=$(MPI) bash bench/kmeans.sh

# The opencl class on this node's first OpenCL device (PoCL here) against
# CLBlast called directly and the CPU kernels (bench/opencl.sh).
bench-opencl: all
	$(Q)BUILD=$(BUILD) bash bench/opencl.sh

# hierarchical partitioning (FPMs, two levels, the 2-D layout) against its baselines
bench-hpart: all
	$(Q)$(BUILD)/bench/hpart

# a node's PUs together against each alone in plbsim (the calibrated H100 node)
bench-coexec: all
	$(Q)PLBSIM=$(PLBSIM) python3 scripts/coexec-bench.py config/sim/h100-mm-*.ini

# the node schedulers of pipelines (fcfs, heft, padas, pams) in plbsim
bench-pipeline: all
	$(Q)BUILD=$(BUILD) python3 bench/pipeline.py --json $(BUILD)/bench-pipeline.json

# plb-mm on a GPU against cuBLAS called directly (needs a CUDA GPU).
bench-gpu: all
	$(Q)BUILD=$(BUILD) bash bench/gpu.sh

# make install PREFIX=/opt/plb (default /usr/local; DESTDIR for packaging):
# libplb (shared and static), plb.h and plb_errors.h, plb.pc for pkg-config,
# a CMake package (find_package(plb): plb::plb, plb::plb_static), the apps,
# plbsim and plb-plot, the example configs and the docs. An app then builds
# with `cc app.c $$(pkg-config --cflags --libs plb)`.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR    ?= $(PREFIX)/share
INSTALL_FILES = $(BINDIR)/plbsim $(BINDIR)/plb-plot $(APPS:%=$(BINDIR)/plb-%) $(LIBDIR)/libplb.a \
                $(LIBDIR)/libplb.so $(LIBDIR)/libplb.so.$(PLB_SOVERSION) \
                $(INCLUDEDIR)/plb.h $(INCLUDEDIR)/plb_errors.h $(LIBDIR)/pkgconfig/plb.pc \
                $(LIBDIR)/cmake/plb/plbConfig.cmake $(LIBDIR)/cmake/plb/plbConfigVersion.cmake
install: $(PLBSIM) $(APP_BINS) $(LIBPLB_A) $(LIBPLB_SO)
	$(Q)install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) \
	  $(DESTDIR)$(DATADIR)/plb/config $(DESTDIR)$(DATADIR)/doc/plb/docs
	$(Q)install -m 755 $(PLBSIM) $(APP_BINS) scripts/plb-plot $(DESTDIR)$(BINDIR)/
	$(Q)install -m 644 $(LIBPLB_A) $(DESTDIR)$(LIBDIR)/
	$(Q)install -m 755 $(LIBPLB_SO) $(DESTDIR)$(LIBDIR)/
	$(Q)ln -sf $(notdir $(LIBPLB_SO)) $(DESTDIR)$(LIBDIR)/libplb.so
	$(Q)install -m 644 include/plb.h include/plb_errors.h $(DESTDIR)$(INCLUDEDIR)/
	$(Q)install -m 644 config/*.ini $(DESTDIR)$(DATADIR)/plb/config/
	$(Q)install -m 644 README.md CHANGELOG.md LICENSE $(DESTDIR)$(DATADIR)/doc/plb/
	$(Q)install -m 644 docs/*.md $(DESTDIR)$(DATADIR)/doc/plb/docs/
	$(Q)printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' '' \
	  'Name: plb' 'Description: runs one data-parallel job over every CPU and GPU of a cluster' \
	  'Version: $(PLB_VERSION)' 'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -lplb' \
	  'Libs.private: $(strip $(LIBPLB_PRIVATE))' >$(DESTDIR)$(LIBDIR)/pkgconfig/plb.pc
	$(Q)bash scripts/cmake-config.sh $(DESTDIR)$(LIBDIR)/cmake/plb $(PLB_VERSION) $(PLB_SOVERSION) \
	  $(LIBDIR) $(INCLUDEDIR) $(strip $(LIBPLB_PRIVATE))
	@echo "plb: installed in $(DESTDIR)$(PREFIX); build an app with: cc app.c \$$(pkg-config --cflags --libs plb)"
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALL_FILES))
	-rmdir $(DESTDIR)$(LIBDIR)/cmake/plb 2>/dev/null
	rm -rf $(DESTDIR)$(DATADIR)/plb $(DESTDIR)$(DATADIR)/doc/plb

# The layer folders, lowest first (test/cli/layers.sh reads them).
layers:
	@echo $(LAYERS)

clean:
	rm -rf $(BUILD)

-include $(ALL_OBJ:.o=.d)
.SECONDARY:

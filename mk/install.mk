# install.mk — `make install` / `make uninstall` (GNU directory variables,
# DESTDIR), the pkg-config file, `make test-install` (in `make test`:
# tests/install) and `make deb` / `make test-deb` (debian/, tests/deb).

VERSION    := 0.1.0
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
# /usr's configuration lives in /etc, anything else's beside it.
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
# dkms looks in /usr/src only; a private PREFIX keeps the source inside it.
DKMSDIR    ?= $(if $(filter /usr /usr/local,$(PREFIX)),/usr/src,$(PREFIX)/src)
INSTALL    ?= install

PRELOAD_DIR  := $(LIBDIR)/scilan
MAN_PAGES    := $(wildcard man/*.[1-8])
DKMS_SRC     := $(wildcard driver/*.c driver/*.h) driver/Kbuild
DKMS_UAPI    := $(wildcard driver/uapi/*.h)
DKMS_DEST    := $(DKMSDIR)/scilan-$(VERSION)
INST_DIR     := $(BUILD)/install
INST_RUN     := $(INST_DIR)/scilan_run
INST_PC      := $(INST_DIR)/scilan.pc
INST_DKMS    := $(INST_DIR)/dkms.conf
D            = $(DESTDIR)

# scilan_run installed in BINDIR finds the hook relative to itself first
# (a DESTDIR tree works before it is moved into place), then at its final path.
PRELOAD_REL  = $(shell realpath -m --relative-to=$(BINDIR) $(PRELOAD_DIR))/libscilan_preload.so
INST_DEFS    = -DSCILAN_PRELOAD_REL='"$(PRELOAD_REL)"' \
	       -DSCILAN_PRELOAD_PATH='"$(PRELOAD_DIR)/libscilan_preload.so"'

$(BUILD)/obj/tools/scilan_run.o: CPPFLAGS += -DSCILAN_VERSION='"$(VERSION)"'
$(BUILD)/obj/tools/ctl_main.o: CPPFLAGS += -DSCILAN_VERSION='"$(VERSION)"'

# The stamp holds the paths compiled in: a different PREFIX/LIBDIR rebuilds.
.PHONY: FORCE
FORCE:
$(INST_DIR)/paths: FORCE
	@mkdir -p $(dir $@)
	@echo '$(PRELOAD_REL) $(PRELOAD_DIR) $(PREFIX) $(LIBDIR) $(INCLUDEDIR) $(MANDIR) $(VERSION)' > $@.new
	@cmp -s $@.new $@ && rm -f $@.new || mv $@.new $@

$(INST_RUN): tools/scilan_run.c $(INST_DIR)/paths
	@echo "  LINK    $@"
	@$(CC) $(CPPFLAGS) -DSCILAN_VERSION='"$(VERSION)"' $(INST_DEFS) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $<

$(INST_PC): $(INST_DIR)/paths $(lastword $(MAKEFILE_LIST))
	@printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' '' \
		'Name: scilan' \
		'Description: sockets over PCIe shared-memory interconnects (native API)' \
		'Version: $(VERSION)' \
		'Cflags: -I$${includedir}' \
		'Libs: -L$${libdir} -lscilan' \
		'Libs.private: -pthread' > $@

$(INST_DKMS): driver/dkms.conf $(INST_DIR)/paths
	@sed 's/^PACKAGE_VERSION=.*/PACKAGE_VERSION="$(VERSION)"/' $< > $@

.PHONY: install uninstall install-bin test-install deb test-deb

install-bin: $(LIB_SO) $(LIB_A) $(HOOK_SO) $(CTL_BIN) $(INST_RUN) $(INST_PC) $(INST_DKMS)

install: install-bin
	$(INSTALL) -d $(D)$(BINDIR) $(D)$(LIBDIR) $(D)$(PRELOAD_DIR) $(D)$(INCLUDEDIR) $(D)$(PKGCONFIGDIR) \
		$(D)$(SYSCONFDIR)/scilan $(D)$(DKMS_DEST)/uapi $(addprefix $(D)$(MANDIR)/man,1 3 5 7 8) \
		$(D)$(BASHCOMPDIR)
	$(INSTALL) -m 0644 $(BUILD)/lib/$(SONAME) $(D)$(LIBDIR)/libscilan.so.$(VERSION)
	ln -sf libscilan.so.$(VERSION) $(D)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(D)$(LIBDIR)/libscilan.so
	$(INSTALL) -m 0644 $(LIB_A) $(D)$(LIBDIR)/libscilan.a
	$(INSTALL) -m 0644 $(HOOK_SO) $(D)$(PRELOAD_DIR)/libscilan_preload.so
	$(INSTALL) -m 0644 libscilan/include/scilan.h $(D)$(INCLUDEDIR)/scilan.h
	$(INSTALL) -m 0644 $(INST_PC) $(D)$(PKGCONFIGDIR)/scilan.pc
	$(INSTALL) -m 0755 $(INST_RUN) $(CTL_BIN) $(D)$(BINDIR)/
	$(INSTALL) -m 0644 tools/scilan.bash-completion $(D)$(BASHCOMPDIR)/scilan_run
	$(INSTALL) -m 0644 tools/scilan.bash-completion $(D)$(BASHCOMPDIR)/scilan_ctl
	$(INSTALL) -m 0644 tools/cluster.conf.example $(D)$(SYSCONFDIR)/scilan/cluster.conf.example
	for m in $(MAN_PAGES); do $(INSTALL) -m 0644 $$m $(D)$(MANDIR)/man$${m##*.}/ || exit 1; done
	$(INSTALL) -m 0644 $(DKMS_SRC) $(INST_DKMS) $(D)$(DKMS_DEST)/
	$(INSTALL) -m 0755 driver/dkms-prebuild.sh $(D)$(DKMS_DEST)/
	$(INSTALL) -m 0644 $(DKMS_UAPI) $(D)$(DKMS_DEST)/uapi/

uninstall:
	rm -f $(addprefix $(D)$(LIBDIR)/,libscilan.so.$(VERSION) $(SONAME) libscilan.so libscilan.a)
	rm -f $(D)$(PRELOAD_DIR)/libscilan_preload.so $(D)$(INCLUDEDIR)/scilan.h $(D)$(PKGCONFIGDIR)/scilan.pc
	rm -f $(D)$(BINDIR)/scilan_run $(D)$(BINDIR)/scilan_ctl
	rm -f $(D)$(BASHCOMPDIR)/scilan_run $(D)$(BASHCOMPDIR)/scilan_ctl
	rm -f $(D)$(SYSCONFDIR)/scilan/cluster.conf.example
	rm -f $(foreach m,$(MAN_PAGES),$(D)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))
	rm -rf $(D)$(DKMS_DEST)
	-rmdir $(D)$(PRELOAD_DIR) $(D)$(SYSCONFDIR)/scilan 2>/dev/null

# Install into a scratch DESTDIR and check it from there (tests/install).
# Alone, a failure fails the make; inside `make test` it is counted.
INSTALL_TEST_SOFT = $(if $(filter test-native,$(MAKECMDGOALS)),|| true)
# The peer program of tests/hook/progs (mk/hooktests.mk) is the connection pair.
test-install: install-bin $(BUILD)/hookprogs/peer
	@echo "== [install] make install DESTDIR=..., pkg-config, man pages, installed scilan_run (tests/install)"
	@tests/install/run.sh $(BUILD) $(BUILD)/results $(INSTALL_TEST_SOFT)

EXTRA_TESTS += test-install
# Debian packages (debian/) into $(BUILD)/deb: dpkg-buildpackage writes its
# .debs into the parent of the source tree, so it runs on an exported copy.

deb:
	@scripts/build-debs.sh $(BUILD)/deb

# Build, install, run redis under /usr/bin/scilan_run, purge (tests/deb).
test-deb: deb
	@tests/deb/run.sh $(BUILD)/deb $(BUILD)/results

# Release packaging, included from the top-level Makefile.
VERSION ?= $(shell git describe --tags --always)
DIST    := dist
TARGETS := linux-amd64 linux-arm64 darwin-arm64

ifeq ($(OS),Windows_NT)
  EXE := .exe
  RM  := del /q
else
  EXE :=
  RM  := rm -f
endif

ifdef SIGN_KEY
  SIGN = gpg --batch --local-user $(SIGN_KEY) --detach-sign
else
  SIGN = @echo "skipping signature for"
endif

define package
$(DIST)/app-$(VERSION)-$(1).tar.gz: build/$(1)/app$(EXE)
	mkdir -p $(DIST)
	tar -czf $$@ -C build/$(1) app$(EXE)
	$(SIGN) $$@
endef

$(foreach t,$(TARGETS),$(eval $(call package,$(t))))

.PHONY: release clean-release
release: $(foreach t,$(TARGETS),$(DIST)/app-$(VERSION)-$(t).tar.gz)
	@echo "release $(VERSION) is in $(DIST)/"

clean-release:
	$(RM) $(DIST)/*.tar.gz $(DIST)/*.sig

# deploy/deploy.mk -- container and deployment targets (included by the top
# Makefile). All need root; the container ones need podman, which
# deploy/podman-base.sh installs from Debian and sets up (its own
# configuration, a local debian:bookworm-slim) when missing: nothing
# outside the repository is called.
#
#   make image           the image alone
#   make container-test  build the image, check it (health, HEALTHCHECK,
#                        hardened run, SIGTERM), compare the image's /embed
#                        bytes with the local build's
#   make compose-test    N replicas behind nginx with podman-compose
#   make deploy-check    validate deploy/k8s/*.yaml, deploy/k8s-model/*.yaml
#                        and the compose files offline (manifest-check),
#                        then run deploy/k8s with podman kube play (kube-test)
#   make kube-test       just the podman kube play run

.PHONY: container-test compose-test deploy-check manifest-check kube-test image \
        image-data

IMAGE           ?= localhost/tokvec:latest
REPLICAS        ?= 3

help::
	@echo "make image        the container image, $(IMAGE) (podman, root)"
	@echo "make container-test  build the image and check it against the local build"
	@echo "make compose-test $(REPLICAS) replicas behind nginx with podman-compose"
	@echo "make deploy-check deploy/k8s*/*.yaml, compose files checked offline"
	@echo "                  (make manifest-check)"
	@echo "                  and run with podman kube play (make kube-test)"

# The image takes the GPT-2 tokenizer from the build context, data/gpt2/
# (make data fetched and checked it; the Dockerfile checks it again), so
# that its build reaches no registry but Debian's mirror. podman and docker
# do not follow a link out of the context: data/gpt2/ must be files here,
# not a link to a data directory elsewhere.
image-data: $(TOKENIZER_DIR)/encoder.json
	@for f in $(TOKENIZER_DIR)/encoder.json $(TOKENIZER_DIR)/vocab.bpe; do \
	  case $$(realpath $$f) in "$(CURDIR)"/*) ;; *) \
	    echo "image-data: $$f is a link out of the build context ($$(realpath \
	      $$f)): make data/ a directory here (e.g. cp -r)" >&2; \
	    exit 1;; esac; done

container-test: $(BUILD)/tokvec $(DEFAULT_TABLE) image-data
	TOKVEC_BIN=$(abspath $(BUILD)/tokvec) TOKVEC_TABLE_FILE=$(abspath $(DEFAULT_TABLE)) \
	  TOKVEC_TOKENIZER_DIR=$(abspath $(TOKENIZER_DIR)) \
	  bash deploy/container-test.sh

# The image alone (podman; docker works the same with the Dockerfile).
image: image-data
	CONTAINERS_CONF=$$(bash deploy/podman-base.sh) && export CONTAINERS_CONF && \
	  podman build --pull=never --format docker --layers -t $(IMAGE) .

compose-test: $(BUILD)/tokvec $(DEFAULT_TABLE) image-data
	TOKVEC_TABLE_FILE=$(abspath $(DEFAULT_TABLE)) REPLICAS=$(REPLICAS) \
	  bash deploy/compose-test.sh

deploy-check: manifest-check kube-test

# Offline: no cluster, no kubectl (Debian's 1.20 client needs a server even
# for --dry-run=client); python3-yaml from Debian.
manifest-check:
	@tools/deps.sh python3 python3-yaml
	$(PYTHON) deploy/check-manifests.py --self-test deploy/k8s/*.yaml
	$(PYTHON) deploy/check-manifests.py --self-test deploy/k8s-model/*.yaml
	$(PYTHON) deploy/check-manifests.py --self-test deploy/compose.yaml \
	  deploy/compose-model.yaml

# The manifests run for real: podman kube play on this machine (root, podman;
# python3-torch for the reference answer).
kube-test: $(BUILD)/tokvec $(DEFAULT_TABLE) image-data
	TOKVEC_TABLE_FILE=$(abspath $(DEFAULT_TABLE)) \
	  bash deploy/kube-test.sh

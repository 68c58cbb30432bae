# Prometheus for deploy/compose.yaml, from Debian's prometheus package on the
# local debian:bookworm-slim (no registry access here for prom/prometheus;
# with one, prom/prometheus works the same with deploy/prometheus/ mounted).
# The configuration is mounted, not copied: see compose.yaml.
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus \
 && rm -rf /var/lib/apt/lists/* /var/log/apt/* /var/log/dpkg.log \
 && mkdir -p /prometheus && chown prometheus:prometheus /prometheus
USER prometheus
EXPOSE 9090
VOLUME /prometheus
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", \
     "--storage.tsdb.path=/prometheus", \
     "--web.listen-address=:9090"]

# nginx for deploy/compose.yaml, built from the local debian:bookworm-slim
# (no registry access here for the official nginx image; with one,
# nginx:stable works the same with deploy/nginx.conf mounted).
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nginx-light \
 && rm -rf /var/lib/apt/lists/* /var/log/apt/* /var/log/dpkg.log \
 && ln -sf /dev/stderr /var/log/nginx/error.log
EXPOSE 8080
STOPSIGNAL SIGQUIT
CMD ["nginx", "-g", "daemon off;"]

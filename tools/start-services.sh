#!/usr/bin/env bash
# Make sure PostgreSQL, MariaDB and RabbitMQ run on 127.0.0.1 for the
# functional tests: install them when missing (Debian packages), start
# whichever is down, and wait until each answers. Galera (galera-4, with
# rsync for a joining node's state transfer) is only installed: the Galera
# tests (cyborg/tests/functional/galera) start clusters of their own, as the
# RabbitMQ cluster tests (cyborg/tests/functional/rabbit_cluster) do from
# rabbitmq-server's scripts.
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
    local name=$1 port=$2
    for _ in $(seq 1 60); do
        port_open "$port" && return 0
        sleep 1
    done
    echo "$name did not start listening on 127.0.0.1:$port" >&2
    return 1
}

missing=()
command -v pg_ctlcluster >/dev/null || missing+=(postgresql)
[ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
command -v rabbitmq-server >/dev/null || missing+=(rabbitmq-server)
[ -e /usr/lib/galera/libgalera_smm.so ] || missing+=(galera-4)
command -v rsync >/dev/null || missing+=(rsync)
if ((${#missing[@]})); then
    echo "Installing ${missing[*]} ..."
    as_root apt-get update -q
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q "${missing[@]}"
fi

if ! port_open 5432; then
    as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
fi
if ! port_open 3306; then
    as_root mkdir -p /run/mysqld
    as_root chown mysql:mysql /run/mysqld 2>/dev/null || true
    as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
fi
if ! port_open 5672; then
    as_root rabbitmq-server -detached
fi

wait_port PostgreSQL 5432
wait_port MariaDB 3306
wait_port RabbitMQ 5672

# The tests connect as postgres (trust auth on 127.0.0.1) and as MariaDB's
# root with an empty password. A freshly installed server asks for more:
# open exactly that access, for this test machine only.
if ! psql -h 127.0.0.1 -U postgres -Atc 'select 1' >/dev/null 2>&1; then
    hba=$(as_root su postgres -c "psql -Atc 'show hba_file'")
    as_root sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
    as_root su postgres -c "psql -Atc 'select pg_reload_conf()'" >/dev/null
    sleep 1
fi
if ! mysql -h 127.0.0.1 -uroot -e 'select 1' >/dev/null 2>&1; then
    as_root mysql -e "ALTER USER root@localhost IDENTIFIED VIA mysql_native_password USING PASSWORD(''); FLUSH PRIVILEGES;"
fi
if [ "$(id -u)" = 0 ] && command -v rabbitmqctl >/dev/null; then
    rabbitmqctl await_startup --timeout 60 >/dev/null
fi
psql -h 127.0.0.1 -U postgres -Atc 'select 1' >/dev/null
mysql -h 127.0.0.1 -uroot -e 'select 1' >/dev/null
echo "PostgreSQL, MariaDB and RabbitMQ are up."

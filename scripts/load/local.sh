# Sourced by run.sh and versus.sh: their knob checks, and the one rule of
# which PostgreSQL server they may use: this machine's, over loopback or a
# local socket, never one a DATABASE_URL points elsewhere.

die() { echo "load/${0##*/}: $*" >&2; exit 1; }
int_in() { [[ $2 =~ ^[0-9]+$ ]] && ((10#$2 >= $3 && 10#$2 <= $4)) || die "$1=$2 must be an integer in $3..$4"; }

is_local_host() {
	local h=$1
	h=${h#[}
	h=${h%]}
	[[ -z $h || $h == /* || $h == localhost || $h =~ ^127\.[0-9]+\.[0-9]+\.[0-9]+$ || $h == ::1 ]]
}

# local_server URL: dies unless URL reaches this machine's server only (its
# host and every host= or hostaddr= of its query, which libpq prefers to
# the host, loopback or a socket). Sets ADMIN_URL (URL, with sslmode=disable
# unless it states one) and authority (its user@host:port), for db_url.
local_server() {
	ADMIN_URL=$1
	[[ $ADMIN_URL =~ ^postgres(ql)?:// ]] || die "DATABASE_URL must be a postgres:// URL"
	authority=${ADMIN_URL#*://}
	authority=${authority%%[/?]*}
	local hostport=${authority##*@} host query kv v h
	if [[ $hostport == \[* ]]; then host=${hostport%%]*}]; else host=${hostport%%:*}; fi
	is_local_host "$host" || die "DATABASE_URL host '$host' is not loopback: the load test only talks to this machine"
	if [[ $ADMIN_URL == *\?* ]]; then
		query=${ADMIN_URL#*\?}
		for kv in ${query//&/ }; do
			case $kv in host=* | hostaddr=*)
				v=${kv#*=}
				for h in ${v//,/ }; do is_local_host "${h//%2F//}" || die "DATABASE_URL $kv is not loopback"; done ;;
			esac
		done
		[[ $query == *sslmode=* ]] || ADMIN_URL="$ADMIN_URL&sslmode=disable"
	else
		ADMIN_URL="$ADMIN_URL?sslmode=disable"
	fi
}

# db_url NAME: the URL of database NAME on local_server's server.
db_url() { echo "${ADMIN_URL%%://*}://${authority}/$1?${ADMIN_URL#*\?}"; }

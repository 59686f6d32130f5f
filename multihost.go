package razao

import (
	"net"
	neturl "net/url"
	"sort"
	"strings"
)

// multiHostDSN writes u, a URL naming several hosts as libpq reads them
// (postgres://user@db1:5432,db2:5433/razao?target_session_attrs=read-write),
// in the key=value form (host=db1,db2 port=5432,5433 …), the only one in
// which lib/pq reads several hosts: its URL parser takes the host list
// for one host name and drops the ports. With target_session_attrs each
// new connection tries the hosts in order and keeps the first that
// qualifies, so after a failover the pool reaches the promoted standby
// without a restart (docs/operations.md, "Replicas and failover").
// hosts is the URL's host list as splitHosts cut it out, u the rest, q
// its query with binary_parameters already set.
func multiHostDSN(hostList string, u *neturl.URL, q neturl.Values) string {
	var hosts, ports []string
	anyPort := false
	for _, hp := range strings.Split(hostList, ",") {
		host, port, err := net.SplitHostPort(hp)
		if err != nil { // no port: lib/pq's default for this host
			host, port = strings.Trim(hp, "[]"), ""
		}
		anyPort = anyPort || port != ""
		hosts, ports = append(hosts, host), append(ports, port)
	}
	kv := map[string]string{"host": strings.Join(hosts, ",")}
	if anyPort {
		kv["port"] = strings.Join(ports, ",")
	}
	if u.User != nil {
		kv["user"] = u.User.Username()
		if pw, ok := u.User.Password(); ok {
			kv["password"] = pw
		}
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		kv["dbname"] = db
	}
	for k := range q {
		kv[k] = q.Get(k)
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	quote := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "='" + quote.Replace(kv[k]) + "'"
	}
	return strings.Join(parts, " ")
}

// splitHosts cuts the host list out of a URL that names several hosts
// (Go's URL parser refuses "db1:5432,db2"): it returns the list and the
// URL with one placeholder host in its place, for the rest to be parsed.
// ok is false for any other string, returned as it is.
func splitHosts(raw string) (hosts, oneHost string, ok bool) {
	scheme, rest, found := strings.Cut(raw, "://")
	if !found {
		return "", raw, false
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	at := strings.LastIndexByte(authority, '@')
	list := authority[at+1:]
	if !strings.Contains(list, ",") {
		return "", raw, false
	}
	return list, scheme + "://" + authority[:at+1] + "multihost.invalid" + rest[end:], true
}

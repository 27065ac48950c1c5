package novaconfig

import (
	"errors"
	"net/url"
	"strings"
)

// TransportURLFor returns raw, a rabbit:// URL, logging in as user with
// password on every host it lists, and the vhost it names ("/" when it
// names none, as oslo.messaging reads it). oslo.messaging lists several
// brokers as user:password@host:port entries separated by commas, which
// net/url cannot parse, so the authority is split here. Query and path
// stay as they are. It is pure; its errors quote nothing of raw, which
// carries a password.
func TransportURLFor(raw, user, password string) (out, vhost string, err error) {
	rest, ok := strings.CutPrefix(raw, "rabbit://")
	if !ok {
		return "", "", errors.New("transport URL is not rabbit://")
	}
	if user == "" || password == "" || strings.ContainsFunc(user+password, isControlRune) {
		return "", "", errors.New("the broker user name or password is empty or holds a control character")
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	hosts := strings.Split(authority, ",")
	userinfo := url.UserPassword(user, password).String()
	for i, h := range hosts {
		if at := strings.LastIndex(h, "@"); at >= 0 {
			h = h[at+1:]
		}
		if h == "" {
			return "", "", errors.New("transport URL lists an empty host")
		}
		hosts[i] = userinfo + "@" + h
	}
	path, _, _ := strings.Cut(tail, "?")
	path, _, _ = strings.Cut(path, "#")
	vhost, err = url.PathUnescape(strings.TrimPrefix(path, "/"))
	if err != nil {
		return "", "", errors.New("transport URL's vhost is not a valid escaped path")
	}
	if vhost == "" {
		vhost = "/"
	}
	return "rabbit://" + strings.Join(hosts, ",") + tail, vhost, nil
}

// FromEnvLiteral reverses EnvLiteral: every "$$" reads "$" again.
func FromEnvLiteral(v string) string { return strings.ReplaceAll(v, "$$", "$") }

func isControlRune(r rune) bool { return r < 0x20 || r == 0x7f }

package console

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// cookieName is the session cookie: an unguessable id, HttpOnly and
// SameSite=Strict, so that scripts cannot read it and other sites cannot
// send it. Credentials stay in the server's memory, inside the session's
// Kafka client.
const cookieName = "minikafka_console"

// session is one logged-in visitor.
type session struct {
	id   string
	acc  *access
	last time.Time // guarded by sessions.mu
}

// sessions are the logged-in visitors, at most max; a session unused for
// idle ends.
type sessions struct {
	max  int
	idle time.Duration

	mu     sync.Mutex // guards byID, closed and every session's last
	byID   map[string]*session
	closed bool // closeAll ran: no session starts any more
}

func newSessions(max int, idle time.Duration) *sessions {
	return &sessions{max: max, idle: idle, byID: map[string]*session{}}
}

// add starts a session for acc, ending the least recently used one when
// there are max already; nil after closeAll.
func (ss *sessions) add(acc *access, now time.Time) *session {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	s := &session{id: base64.RawURLEncoding.EncodeToString(b[:]), acc: acc, last: now}
	var evicted *session
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return nil
	}
	if len(ss.byID) >= ss.max {
		for _, o := range ss.byID {
			if evicted == nil || o.last.Before(evicted.last) {
				evicted = o
			}
		}
		delete(ss.byID, evicted.id)
	}
	ss.byID[s.id] = s
	ss.mu.Unlock()
	if evicted != nil {
		evicted.acc.close()
	}
	return s
}

// fromRequest returns the live session the request's cookie names, or nil.
func (ss *sessions) fromRequest(r *http.Request, now time.Time) *session {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.byID[ck.Value]
	if s == nil || now.Sub(s.last) > ss.idle {
		return nil // an idle one is closed by the next expire
	}
	s.last = now
	return s
}

// remove ends the request's session, if any.
func (ss *sessions) remove(r *http.Request) {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return
	}
	ss.mu.Lock()
	s := ss.byID[ck.Value]
	delete(ss.byID, ck.Value)
	ss.mu.Unlock()
	if s != nil {
		s.acc.close()
	}
}

// expire ends the sessions idle for longer than idle.
func (ss *sessions) expire(now time.Time) {
	var gone []*session
	ss.mu.Lock()
	for id, s := range ss.byID {
		if now.Sub(s.last) > ss.idle {
			gone = append(gone, s)
			delete(ss.byID, id)
		}
	}
	ss.mu.Unlock()
	for _, s := range gone {
		s.acc.close()
	}
}

// closeAll ends every session, and refuses new ones.
func (ss *sessions) closeAll() {
	ss.mu.Lock()
	ss.closed = true
	ss.mu.Unlock()
	ss.expire(time.Now().Add(ss.idle + time.Hour))
}

// sessionInfo tells the pages whether to ask for a login.
type sessionInfo struct {
	Secure     bool     `json:"secure"` // the listener authenticates: log in first
	User       string   `json:"user"`   // "" when not logged in
	Mechanisms []string `json:"mechanisms,omitempty"`
	ReadOnly   bool     `json:"readOnly"` // no admin key: nothing can be changed here
}

func (c *Console) serveSession(w http.ResponseWriter, r *http.Request) {
	info := sessionInfo{Secure: c.cfg.Kafka.SASL, Mechanisms: c.mechanisms(), ReadOnly: c.cfg.AdminKey == ""}
	if s := c.sessions.fromRequest(r, time.Now()); s != nil && info.Secure {
		info.User = s.acc.user
	}
	writeJSON(w, http.StatusOK, info)
}

// mechanisms are the SASL mechanisms offered on the login form.
func (c *Console) mechanisms() []string {
	if !c.cfg.Kafka.SASL {
		return nil
	}
	if len(c.cfg.Kafka.Mechanisms) > 0 {
		return c.cfg.Kafka.Mechanisms
	}
	return []string{"SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"}
}

// serveLogin checks a visitor's credentials against the listener and
// starts a session. It takes JSON only: a form posted from another site
// cannot send it without the browser's preflight, which nothing allows.
func (c *Console) serveLogin(w http.ResponseWriter, r *http.Request) {
	if !c.cfg.Kafka.SASL {
		writeError(w, fmt.Errorf("%w: this node's listener takes no login", ErrBadRequest))
		return
	}
	if c.closed.Load() {
		writeError(w, ErrClosed)
		return
	}
	var cr credentials
	if r.Header.Get("Content-Type") != "application/json" ||
		json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&cr) != nil {
		writeError(w, fmt.Errorf("%w: want a JSON login", ErrBadRequest))
		return
	}
	acc, err := newAccess(c.cfg.Kafka, cr)
	if err != nil {
		writeError(w, err)
		return
	}
	select {
	case c.logins <- struct{}{}:
	case <-r.Context().Done():
		acc.close()
		return
	}
	err = c.checkLogin(r, acc)
	<-c.logins
	if err != nil {
		acc.close()
		writeError(w, err)
		return
	}
	s := c.sessions.add(acc, time.Now())
	if s == nil {
		acc.close()
		writeError(w, ErrClosed)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.id, Path: "/console/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	writeJSON(w, http.StatusOK, sessionInfo{Secure: true, User: cr.User, ReadOnly: c.cfg.AdminKey == ""})
}

func (c *Console) checkLogin(r *http.Request, acc *access) error {
	ctx, cancel := context.WithTimeout(r.Context(), c.cfg.RequestTimeout)
	defer cancel()
	return acc.check(ctx)
}

func (c *Console) serveLogout(w http.ResponseWriter, r *http.Request) {
	c.sessions.remove(r)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/console/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, sessionInfo{Secure: c.cfg.Kafka.SASL, Mechanisms: c.mechanisms(), ReadOnly: c.cfg.AdminKey == ""})
}

package usergrants

import (
	"sync"
	"time"
)

// grantCache is what this replica read of grants: each for cacheFor, so
// that a call does not read the store, and a grant revoked on another
// replica stops being used within it; the access tokens servers refused
// (refreshed at the next call); and the Await calls to wake when a
// grant arrives.
type grantCache struct {
	now     func() time.Time
	mu      sync.Mutex
	read    map[string]*cached         // grant record key -> the grant read last
	waiters map[string][]chan struct{} // grant record key -> Await calls
	stale   map[string]string          // grant record key -> an access token its server refused
}

// cached is a grant as this replica read it.
type cached struct {
	g  Grant
	at time.Time
}

func newGrantCache(now func() time.Time) grantCache {
	return grantCache{now: now, read: map[string]*cached{}, waiters: map[string][]chan struct{}{}, stale: map[string]string{}}
}

// remember keeps g as read now, and wakes who waits for it.
func (c *grantCache) remember(key string, g Grant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read[key] = &cached{g: g, at: c.now()}
	if c.stale[key] != g.AccessToken {
		delete(c.stale, key)
	}
	for _, w := range c.waiters[key] {
		close(w)
	}
	delete(c.waiters, key)
}

// forget drops what was read of key's grant (it is gone).
func (c *grantCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.read, key)
	delete(c.stale, key)
}

// get is the grant of key read within cacheFor, and the access token of
// it its server refused, if any.
func (c *grantCache) get(key string) (g Grant, stale string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stale = c.stale[key]
	r := c.read[key]
	if r == nil || c.now().Sub(r.at) > cacheFor {
		return Grant{}, stale, false
	}
	return r.g, stale, true
}

// refused marks token, of key's grant, refused by its server.
func (c *grantCache) refused(key, token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stale[key] = token
}

// wait returns a channel closed when key's grant is next remembered.
func (c *grantCache) wait(key string) <-chan struct{} {
	w := make(chan struct{})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiters[key] = append(c.waiters[key], w)
	return w
}

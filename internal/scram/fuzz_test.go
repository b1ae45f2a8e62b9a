package scram

import "testing"

// FuzzServerConversation: any two client messages end in an answer or an
// error, never a panic.
func FuzzServerConversation(f *testing.F) {
	c, _ := NewCredential(SHA256, "p", MinIterations)
	f.Add([]byte("n,,n=u,r=abc"), []byte("c=biws,r=abc,p=AAAA"))
	f.Add([]byte("y,a=u,n=u,r=x"), []byte("c=eSxhPXUs,r=x,p="))
	f.Add([]byte("n,,n=u=2Cv,r=abc,e=1"), []byte(""))
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := NewServerConversation(SHA256, func(string) (Credential, bool) { return c, true })
		if _, _, err := s.Step(first); err != nil {
			return
		}
		s.Step(final)
	})
}

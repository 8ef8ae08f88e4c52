/** The console's entry: one credential store and one service for the page, then the app. */
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app.tsx';
import { Service } from './api/service.ts';
import { CredentialStore } from './auth/credential-store.ts';
import { Console } from './context.ts';
import './styles.css';

const store = new CredentialStore(location.origin);
const service = new Service(location.origin, store);

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <Console.Provider value={{ service, store }}>
      <App />
    </Console.Provider>
  </StrictMode>,
);

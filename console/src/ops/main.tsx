/** The operator's console's entry (ops port only): the app, asking for the ops token first. */
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { OpsApp } from './ops-app.tsx';
import '../styles.css';

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <OpsApp />
  </StrictMode>,
);
